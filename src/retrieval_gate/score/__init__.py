"""Score → aggregate → results: pure functions over plain data."""
