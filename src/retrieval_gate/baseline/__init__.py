"""The baseline file: its model, its text form and migrations, its refresh, the fingerprint of how
its numbers were made, and the KB card diff. Pure."""
