"""Answers: the dataclasses a user gets, the drafter, the LLM seam and the reply sanitizer."""
