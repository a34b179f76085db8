"""The ``topoopt-milp`` command line (click). Commands live in one module per area; this
module holds the group and sorts errors by kind (:mod:`topoopt_milp.core.errors`): bad user input
(an :class:`~topoopt_milp.core.errors.InputError`, a missing file) is one line on stderr and exit
code 2; anything else is a bug and shows its traceback (exit code 1)."""

from __future__ import annotations

import logging
import sys
import time

import click

from ..core.deadline import note_startup, process_started
from ..core.errors import InputError
from ..core.stop import exit_code, sigterm_as_interrupt, what

# Errors that are the user's input, not our bug: one line, exit code 2, no traceback.
USER_ERRORS: tuple[type[Exception], ...] = (InputError, FileNotFoundError)


class UserError(click.ClickException):
    exit_code = 2


_STARTED: list[float] = []  # when the running command started (perf_counter)


def command_started() -> float:
    """When the running command started: the start of the process for ``topoopt-milp ...``
    (start-up counts against a time limit), the call for an in-process ``main(args)``."""
    return _STARTED[-1] if _STARTED else time.perf_counter()


class _Group(click.Group):
    def main(self, args=None, *rest, **kwargs):
        # args is None: the command line of this process (the console script, python -m)
        _STARTED.append(process_started() if args is None else time.perf_counter())
        if args is None:  # this process's own start-up: the slowdown its estimates scale by
            note_startup()
        try:
            with sigterm_as_interrupt():  # a scheduler's kill takes Ctrl-C's paths
                return super().main(args, *rest, **kwargs)
        finally:
            _STARTED.pop()

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            raise UserError(str(exc)) from None
        except click.BadParameter as exc:
            # a path argument that names a directory (or a file where a folder is wanted):
            # one line naming the argument and the file, exit 2 -- not click's usage block
            # a missing one keeps click's own message (its .message is empty)
            if (exc.param is None or not isinstance(exc.param.type, click.Path)
                    or isinstance(exc, click.MissingParameter)):
                raise
            p = exc.param
            name = p.opts[0] if isinstance(p, click.Option) else p.human_readable_name
            raise UserError(f"{name}: {exc.message}") from None
        except KeyboardInterrupt as exc:  # not click's "Aborted!" and exit code 1
            click.echo(f"{what(exc)}: stopped", err=True)
            raise SystemExit(exit_code(exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.version_option(package_name="topoopt-milp")
def main(verbose: int) -> None:
    """Topology, link allocation and routing for direct-connect DNN training clusters.

    Exact MILP (PuLP: HiGHS, CBC) and CP-SAT models next to TopoOpt's TotientPerms and
    TopologyFinder heuristics. Units: bytes, seconds, Gbps. Run `topoopt-milp methods` to see
    what can solve an instance.

    Words mean one thing in every command: --out/-o is what a command writes, --format the
    format of its output (--input-format: of an input file), --seed a seed and --num-seeds a
    count of seeds, --jobs/-j runs in parallel (default: one per core); a family is a folder
    of the instance library, a problem what a method solves (select, alloc, route, joint), a
    pattern the synthetic traffic of `generate`."""
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def _register() -> None:
    # Imported for their side effect of adding commands to `main`; kept here so that
    # `topoopt_milp.cli:main` is complete whichever module is imported first.
    from . import core  # noqa: F401, I001 (one line per command module)
    from . import generate  # noqa: F401
    from . import workload  # noqa: F401
    from . import bench  # noqa: F401
    from . import reproduce  # noqa: F401
    from . import certify  # noqa: F401
    from . import simulate  # noqa: F401


_register()
