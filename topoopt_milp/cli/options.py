"""Command-line options generated from the parameter classes of :mod:`topoopt_milp.core.params`.

Every knob is declared once, as a field of a parameter class; this module turns fields into
click options (``time_limit`` -> ``--time-limit``), with the field's help text, its allowed
values as a ``click.Choice`` and its default shown in the help. A knob shared by several
classes (``rings``, ``k_paths``) is one option whose choices and help texts are the union; the
method's own class validates the value it receives (an error names the key and the method).
Options that were not given stay ``None`` and are left out, so each method uses its own
default.
"""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Callable, Iterable
from types import UnionType

import click

from ..core.params import Params


def _option_type(hint, choices):
    kinds = typing.get_args(hint) if isinstance(hint, UnionType) else (hint,)
    if choices and int in kinds:
        return None  # "auto" | "all" | an integer: parsed by parse_knob
    if choices:
        return click.Choice(list(choices))
    if bool in kinds:
        return bool
    if int in kinds:
        return click.INT
    if float in kinds:
        return click.FLOAT
    return click.STRING


def parse_knob(value):
    """A string given for a knob that takes a word or an integer (``matching_top_k``)."""
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value


def knob_options(classes: Iterable[type[Params]], skip: Iterable[str] = (),
                 owners: dict[type[Params], str] | None = None,
                 only: Iterable[str] | None = None, prefix: str = "",
                 defaults: dict[str, object] | None = None) -> Callable:
    """A decorator adding one click option per knob of ``classes`` (union by name, in
    declaration order), except the names in ``skip`` (or only those in ``only``). ``owners``
    names, per class, who uses it (for the help text of knobs whose default differs between
    classes); ``prefix`` goes before each help text (``"--routing: "``); ``defaults``
    overrides the default of a knob for this command (``bench``'s 60 s time limit)."""
    fields: dict[str, list] = {}
    only = None if only is None else set(only)
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for f in cls.knobs():
            if f.name in skip or f.metadata.get("cli") is False or (
                    only is not None and f.name not in only):
                continue
            fields.setdefault(f.name, []).append((cls, f, hints[f.name]))

    def decorate(func):
        for name, entries in reversed(list(fields.items())):
            _, f, hint = entries[0]
            meta = f.metadata
            choices = []
            for _, g, _ in entries:
                choices += [c for c in (g.metadata.get("choices") or ()) if c not in choices]
            own = (defaults or {}).get(name)
            given_defaults = {repr(g.default): cls for cls, g, _ in entries}
            if own is not None:
                default_text = f"default: {own!r}"
            elif len(given_defaults) == 1:
                default_text = f"default: {next(iter(given_defaults))}"
            else:
                default_text = "default: " + "; ".join(
                    f"{d} ({(owners or {}).get(cls, cls.__name__)})"
                    for d, cls in given_defaults.items())
            flag = meta.get("flag") or "--" + name.replace("_", "-")
            kind = _option_type(hint, choices)
            # a shared knob (rings) explains the choices each method adds in its own words
            helps = list(dict.fromkeys(g.metadata.get("help", "") for _, g, _ in entries))
            help_text = f"{prefix}{' '.join(h for h in helps if h)} [{default_text}]"
            if kind is bool:
                func = click.option(f"{flag}/--no-{flag[2:]}", name, default=own,
                                    help=help_text)(func)
            else:
                func = click.option(flag, name, type=kind, default=own, help=help_text,
                                    metavar=None if kind is not None else "WORD|INT")(func)
        return func

    return decorate


def given(knobs: dict) -> dict:
    """The knobs the user gave (click passes ``None`` for the others)."""
    return {k: parse_knob(v) for k, v in knobs.items() if v is not None}


def cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's or a job's share)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def jobs_option(f):
    """``--jobs/-j N``: runs in parallel, each its own process; default one per core."""
    return click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                        help=f"Runs in parallel, each in its own process [default: one per "
                             f"core, {cores()} here].")(f)


def deprecated_alias(old: str, new: str, value, new_value, default=None):
    """The value of an option given under its old spelling ``old`` (a hidden option kept so
    that scripts keep working) or its new one ``new``; both at once is an error."""
    if value is None:
        return default if new_value is None else new_value
    if new_value is not None:
        raise click.UsageError(f"{old} is the old spelling of {new}: give one of them")
    click.echo(f"note: {old} is now spelled {new}", err=True)
    return value


def settings_from(pairs: tuple[str, ...]) -> dict:
    """``--set KEY=VALUE`` pairs as knobs (values parsed as JSON when they are JSON)."""
    out = {}
    for p in pairs:
        if "=" not in p:
            raise click.BadParameter(f"expected KEY=VALUE, got {p!r}", param_hint="--set")
        key, value = p.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)  # numbers, true/false, null
        except json.JSONDecodeError:
            out[key.strip()] = value  # plain strings: --set variant=ksp
    return out
