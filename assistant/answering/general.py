"""How an answer says it is only a general explanation: Python's record of an error that a library raised,
or that reached the user through it, explains the error in general, not its cause in that library.

Why: such an answer was shown like any other, as if Python's "pass the argument" were the cause of
``App.command() got an unexpected keyword argument 'ack'``; its first line now says whose cause errata has
no record of (``retrieval.ownership.unrecorded_owner`` tells which library).
"""

from __future__ import annotations

from ..knowledge.records import Record


def general_explanation(record: Record, owner: str) -> str:
    """The first line of an offline answer drawn from Python's general record."""
    return (
        f"_Python's general explanation of this {record.error_class}; errata has no record of {owner}'s own "
        "cause, so check what the library expects where it raised it._"
    )


def general_task(owner: str) -> str:
    """What the LLM is told, so its reply says the same in its first sentence."""
    return (
        f" Record [1] is Python's general explanation of this error, which was raised inside or through {owner}; "
        f"errata has no record of {owner}'s own cause. Say so in your first sentence, then explain from the "
        "record what the error means in general."
    )
