"""Releases as input: downloading a package's releases, one record per raise across them, and API-change records.
Owns pip downloads, the release cache, raise identity, merging and API diffs; knows nothing of retrieval or drafting.
"""
