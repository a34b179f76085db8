"""Errors by kind: bad user input versus everything else.

:class:`InputError` is the one base class of every error caused by what a user gave the toolkit
(an instance or solution file, a parameter, a method name, a run store, a size the method
cannot handle). Its message names the file and the field and fits on one line; the command
line prints it and exits with code 2, without a traceback. Any other exception is a bug in the
toolkit (or in a solver) and is shown with its traceback (exit code 1), so it can be reported.

``InputError`` subclasses ``ValueError`` so that library callers that catch ``ValueError`` keep
working, but the reverse does not hold: a plain ``ValueError`` is *not* treated as user error.
"""

from __future__ import annotations


class InputError(ValueError):
    """The user's input is invalid; the message names the file and/or the field."""
