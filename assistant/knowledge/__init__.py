"""The knowledge base: records, their validation and the index built from them."""
