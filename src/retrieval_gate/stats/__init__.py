"""Paired statistics of a mean difference: the sign-flip / sign test, the paired interval, the
minimum detectable effect and the multiple-comparison correction. Pure."""
