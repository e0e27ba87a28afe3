"""Reading a paste: the error lines, frames, prose and the question a user typed."""
