"""Files on disk: the one atomic-write helper, pread-backed arrays, postings and records kept on disk.
Must not know what records mean or how they are ranked."""
