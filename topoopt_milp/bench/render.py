"""Tables as text -- Markdown, LaTeX, CSV and JSON -- with human headers and safe cells.

Some cells come from instance files (instance and method names are user input), so every
renderer neutralises what could change a table's structure or meaning:

* Markdown: ``|`` is escaped as ``\\|`` and line breaks become spaces, so a name can add
  neither a column nor a row;
* LaTeX: every special character (``\\ { } _ & % # $ ^ ~ < > | [ ] *`` and ``--``) is written
  with its text command, line breaks and other control characters become spaces, and
  characters outside ASCII are written as ``[U+XXXX]``, so any pdflatex compiles the file;
* CSV: a text cell starting with ``= + - @`` (or a tab or carriage return) gets a leading
  ``'``, so that a spreadsheet shows it as text instead of evaluating a formula (the OWASP
  rule); numbers are left as they are;
* JSON: strings are escaped by the encoder; missing values are ``null``.

Markdown and LaTeX headers are human words with units (:data:`HEADERS`); CSV and JSON keep
the column names, which are the stable interface for scripts.

LaTeX layout (preamble: ``\\usepackage{booktabs,graphicx,rotating}``). A table is a
``table`` float in ``\\footnotesize`` with booktabs rules and a ``\\label``. Its width is
estimated from the longest cell of each column; a table wider than the portrait text width of
the minimal ``article`` (:data:`TEXT_WIDTH_PT`) is set as a ``sidewaystable`` (rotated on the
page). A table longer than :data:`ROWS_PORTRAIT` (:data:`ROWS_SIDEWAYS` rotated) rows is split
into floats that keep its number, the later ones captioned "(continued)". As a last guard,
a tabular that still comes out wider than ``\\linewidth`` is scaled down to it
(``\\resizebox``), so no table overflows the page.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError

FORMATS = ("md", "latex", "csv", "json")

# Header of each column in Markdown and LaTeX ("\n" breaks the LaTeX header; Markdown joins
# the lines with a space). Columns not listed keep their name.
HEADERS = {
    "degree": "d", "seeds": "seeds", "objective": "objective\n[s]",
    "objective_min": "best obj.\n[s]", "best_bound": "bound\n[s]", "bound": "own bound\n[s]",
    "bound_source": "bound\nfrom", "bound_scope": "bound\nscope", "gap_pct": "gap\n[%]",
    "ratio": "obj. /\nbound", "routing_gap_pct": "routing\ngap [%]", "runtime_s": "runtime\n[s]",
    "gap_error": "gap\nerror", "instances": "inst-\nances", "runs": "runs",
    "optimal": "opti-\nmal", "feasible": "feas-\nible", "infeasible": "infeas-\nible",
    "bound_only": "bound", "no_solution": "no so-\nlution", "error": "error", "mean_gap_pct": "mean\ngap [%]",
    "max_gap_pct": "max\ngap [%]", "mean_ratio": "mean obj.\n/ bound",
    "bound_sources": "bounds\nfrom", "sgm_runtime_s": "runtime\nsgm [s]",
    "gap_errors": "gap\nerrors",
    # the headline table (:mod:`.headline`)
    "workload": "workload", "link_gbps": "B\n[Gbps]", "tf_s": "TF\n[s]", "tf_lp_s": "TF+LP\n[s]",
    "tf_topology_gap_pct": "TF topo.\ngap [%]", "tf_routing_gap_pct": "TF rout.\ngap [%]",
    "tp_s": "TP\n[s]", "tp_lp_s": "TP+LP\n[s]", "tp_topology_gap_pct": "TP topo.\ngap [%]",
    "tp_routing_gap_pct": "TP rout.\ngap [%]", "best_s": "best\n[s]", "best_by": "best by",
    "bound_s": "bound\n[s]", "bound_by": "bound\nfrom", "certified_gap_pct": "certified\ngap [%]",
}
_MD_HEADERS = {  # Markdown reads one line; hyphenations of the LaTeX headers are undone
    "instances": "instances", "optimal": "optimal", "feasible": "feasible",
    "infeasible": "infeasible", "no_solution": "no solution", "mean_ratio": "mean obj. / bound",
}

# Number formats by column (wide tables pass their own for the method columns).
NUMBER_FORMATS = {
    "objective": "{:.6g}", "objective_min": "{:.6g}", "bound": "{:.6g}", "best_bound": "{:.6g}",
    "gap_pct": "{:.2f}", "routing_gap_pct": "{:.2f}", "ratio": "{:.3f}", "mean_ratio": "{:.3f}",
    "mean_gap_pct": "{:.2f}", "max_gap_pct": "{:.2f}", "runtime_s": "{:.3g}", "sgm_runtime_s": "{:.3g}",
}

# LaTeX geometry of the minimal article (10 pt, letter paper), tables in \footnotesize with
# \tabcolsep = 4 pt. Advance widths [pt] of Computer Modern at 8 pt (cmr8), measured with
# pdflatex; widths of the typeset (escaped) text, so estimates are within kerning of the truth.
TEXT_WIDTH_PT = 345.0
COLUMN_PAD_PT = 8.0
TEXT_HEIGHT_PT = 550.0
ROW_PT = 9.5          # \footnotesize baseline skip: the height of one table row
CAPTION_LINE_PT = 12  # one caption line (\normalsize)
HEAD_PT = 45          # header rows, rules and float spacing
CAPTION_LINES = {False: 6, True: 4}  # caption lines allowed for before rows are given up
ROWS_PORTRAIT, ROWS_SIDEWAYS = (
    int((height - HEAD_PT - CAPTION_LINES[side] * CAPTION_LINE_PT) / ROW_PT)
    for side, height in ((False, TEXT_HEIGHT_PT), (True, TEXT_WIDTH_PT)))
_CHAR_PT = {ch: w for chars, w in (
    ("!',.:;[]`il|", 2.36), ("fj", 2.6), (" -", 2.83), ("I_", 3.06), ("()rt", 3.31), ("s", 3.35),
    ("cez", 3.78), ("?", 4.01), ('"$*/0123456789\\^ago{}~', 4.25), ("J", 4.36), ("kqvxy", 4.49),
    ("Sbdhnpu", 4.72), ("Z", 5.19), ("L", 5.31), ("F", 5.54), ("EP", 5.78), ("B", 6.02),
    ("CTw", 6.14), ("R", 6.25), ("AHNUVXY", 6.37), ("D", 6.49), ("K", 6.6),
    ("&+<=>@OQ", 6.61), ("G", 6.67), ("#%m", 7.08), ("M", 7.78), ("W", 8.73)) for ch in chars}
_SUPERSCRIPT = 0.7  # \textsuperscript letters are set at about 70 % size
PREAMBLE = r"\usepackage{booktabs,graphicx,rotating}"


def header(column: str, latex: bool = False) -> str:
    """The human header of ``column`` (LaTeX lines separated by ``\\n``)."""
    text = HEADERS.get(column, column)
    return text if latex else _MD_HEADERS.get(column, text.replace("\n", " "))


def cell_text(value, fmt: str | None) -> str:
    """A cell as text: ``-`` for a missing value, ``fmt`` for numbers; a number that rounds
    to zero from below reads ``0.00``, never ``-0.00``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if fmt is None or isinstance(value, str):
        return str(value)
    text = fmt.format(value)
    return fmt.format(0.0) if text.startswith("-") and float(text) == 0 else text


# -- escaping ---------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


_MD_SPECIALS = re.compile(r"([\\|<>\[\]`*])")


def md_escape(text: str) -> str:
    """A Markdown table cell: line breaks and control characters become a space; ``\\``,
    ``|`` and the inline markup characters ``< > [ ] ` *`` are backslash-escaped, so the text
    stays one cell of one row and shows as itself (no link, tag or code span)."""
    return _MD_SPECIALS.sub(r"\\\1", _CONTROL.sub(" ", str(text)))


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "&": r"\&", "%": r"\%",
    "#": r"\#", "$": r"\$", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
    # [ and * after a row's \\ would be read as its optional argument or star
    "[": "{[}", "]": "{]}", "*": "{*}",
}


def latex_escape(text: str) -> str:
    """Text that typesets as itself in LaTeX (see the module docstring)."""
    out = []
    for ch in _CONTROL.sub(" ", str(text)):
        if ch in _LATEX_SPECIALS:
            out.append(_LATEX_SPECIALS[ch])
        elif ord(ch) > 126:
            out.append(f"{{[}}U+{ord(ch):04X}{{]}}")
        elif ch == "-" and out and out[-1].endswith("-"):
            out.append("{}-")  # "--" would typeset as an en dash
        else:
            out.append(ch)
    return "".join(out)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value):
    """A text cell a spreadsheet cannot evaluate (leading ``'`` before ``= + - @``)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


# -- renderers ----------------------------------------------------------------------------------

def render(df: pd.DataFrame, fmt: str, caption: str | None = None,
           formats: dict[str, str] | None = None, marks: dict | None = None,
           label: str | None = None, group: str | None = None) -> str:
    """``df`` as ``md`` (a GitHub pipe table), ``latex`` (module docstring), ``csv`` (full
    precision, empty cells for missing values) or ``json`` (a list of records).

    ``marks[(row index, column)]`` appends a bound letter to a cell (md and LaTeX);
    ``label`` is the LaTeX ``\\label``; ``group`` (LaTeX) turns that column into heading rows
    (one per value) instead of a column."""
    if fmt == "csv":
        return df.map(csv_safe).to_csv(index=False)
    if fmt == "json":
        return json.dumps(_records(df), indent=1, allow_nan=False) + "\n"
    if fmt == "md":
        return _markdown(df, caption, formats, marks or {})
    if fmt == "latex":
        return latex_table(df, caption, label, formats, marks or {}, group)
    raise InputError(f"format: unknown table format {fmt!r} (known: {', '.join(FORMATS)})")


def _records(df: pd.DataFrame) -> list[dict]:
    def plain(v):
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return None if v is pd.NA or v is pd.NaT else v

    return [{str(k): plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def _numeric(df: pd.DataFrame, column: str) -> bool:
    """A column of numbers (right-aligned), also when pandas stores it as objects."""
    col = df[column]
    if pd.api.types.is_bool_dtype(col):
        return False
    if pd.api.types.is_numeric_dtype(col):
        return True
    values = col.dropna()
    return len(values) > 0 and all(isinstance(v, int | float | np.number) and not isinstance(v, bool)
                                   for v in values)


def _cells(df: pd.DataFrame, formats: dict | None, marks: dict, escape, mark) -> list[list[str]]:
    fmts = {**NUMBER_FORMATS, **(formats or {})}
    rows = []
    for i in df.index:
        row = []
        for c in df.columns:
            text = escape(cell_text(df.at[i, c], fmts.get(c)))
            letter = marks.get((i, c))
            row.append(mark(text, letter) if letter and text != "-" else text)
        rows.append(row)
    return rows


def _markdown(df: pd.DataFrame, caption: str | None, formats, marks: dict) -> str:
    rows = _cells(df, formats, marks, md_escape, lambda t, m: f"{t} ({md_escape(m)})")
    # our own headers are left as written ("gap [%]"); other column names (methods) escaped
    heads = [header(str(c)) if str(c) in HEADERS else md_escape(str(c)) for c in df.columns]
    shown = pd.DataFrame(rows, columns=heads)
    align = ["right" if _numeric(df, c) else "left" for c in df.columns]
    text = shown.to_markdown(index=False, disable_numparse=True, colalign=align) + "\n"
    # the caption is one paragraph line above the table: no line break may end it early
    return (_CONTROL.sub(" ", caption) + "\n\n" if caption else "") + text


def latex_label(text: str) -> str:
    """A ``\\label`` key: runs of anything but letters, digits, ``:`` and ``-`` become ``-``."""
    return re.sub(r"[^A-Za-z0-9:-]+", "-", str(text)).strip("-")


def text_width_pt(text: str) -> float:
    """Width [pt] of ``text`` as typeset in a table cell (before escaping; characters outside
    ASCII count as their ``[U+XXXX]`` placeholder)."""
    text = _CONTROL.sub(" ", str(text))
    return sum(_CHAR_PT.get(ch, 6.6) if ord(ch) < 127 else 8 * 4.25 for ch in text)


def estimated_width_pt(df: pd.DataFrame, formats: dict | None = None, marks: dict | None = None,
                       group: str | None = None) -> float:
    """Estimated natural width [pt] of the LaTeX tabular of ``df`` (module constants)."""
    cols = [c for c in df.columns if c != group]
    plain = _cells(df[cols], formats, {}, str, None)
    width = 0.0
    for k, c in enumerate(cols):
        heads = [text_width_pt(line) for line in header(str(c), latex=True).split("\n")]
        cells = [text_width_pt(r[k]) + _SUPERSCRIPT * text_width_pt((marks or {}).get((i, c), ""))
                 for i, r in zip(df.index, plain, strict=True)]
        width += max([*heads, *cells]) + COLUMN_PAD_PT
    if group is not None:  # an italic heading row spans the table
        width = max([width, *(text_width_pt(str(v)) + COLUMN_PAD_PT for v in df[group])])
    return width


def latex_table(df: pd.DataFrame, caption: str | None, label: str | None = None,
                formats: dict | None = None, marks: dict | None = None,
                group: str | None = None) -> str:
    """Booktabs float(s) for ``df`` that fit the page (module docstring)."""
    marks = marks or {}
    cols = [c for c in df.columns if c != group]
    # up to 5 % too wide stays upright: the \resizebox guard shrinks it invisibly
    sideways = estimated_width_pt(df, formats, marks, group) > 1.05 * TEXT_WIDTH_PT
    per_float = ROWS_SIDEWAYS if sideways else ROWS_PORTRAIT
    if caption:  # a caption longer than the allowance of the first float takes rows from it
        line_pt = (TEXT_HEIGHT_PT if sideways else TEXT_WIDTH_PT) / 1.25  # normalsize is wider
        extra = math.ceil(text_width_pt(caption) / line_pt) - CAPTION_LINES[sideways]
        first = per_float - max(0, math.ceil(extra * CAPTION_LINE_PT / ROW_PT))
    else:
        first = per_float
    cells = _cells(df[cols], formats, marks, latex_escape,
                   lambda t, m: f"{t}\\textsuperscript{{{latex_escape(m)}}}")
    lines: list[tuple[str, str]] = []  # (kind, text): group heading or row
    last = object()
    for i, row in zip(df.index, cells, strict=True):
        if group is not None and df.at[i, group] != last:
            last = df.at[i, group]
            lines.append(("group", latex_escape(cell_text(last, None))))
        lines.append(("row", " & ".join(row) + r" \\"))
    first = max(first, 1)
    chunks = [lines[:first]] + [lines[k:k + per_float] for k in range(first, len(lines), per_float)]
    align = "".join("r" if _numeric(df, c) else "l" for c in cols)
    heads = " & ".join(_latex_header(str(c), _numeric(df, c)) for c in cols) + r" \\"
    env = "sidewaystable" if sideways else "table"
    out = [f"% generated by topoopt-milp; needs {PREAMBLE}",
           r"\ifdefined\topooptbox\else\newsavebox{\topooptbox}\fi"]
    for k, chunk in enumerate(chunks):
        out.append(f"\\begin{{{env}}}" + ("[htbp]" if env == "table" else ""))
        out.append(r"\centering")
        if k == 0:
            if caption is not None:
                out.append("\\caption{" + latex_escape(caption) + "}")
            if label and latex_label(label):
                out.append(f"\\label{{{latex_label(label)}}}")
        else:
            out += [r"\addtocounter{table}{-1}", r"\caption[]{(continued)}"]
        out += [r"\footnotesize", r"\setlength{\tabcolsep}{4pt}",
                f"\\sbox{{\\topooptbox}}{{\\begin{{tabular}}{{{align}}}", r"\toprule", heads,
                r"\midrule"]
        for n_line, (kind, text) in enumerate(chunk):
            if kind == "group":
                if n_line:
                    out.append(r"\midrule")
                out.append(f"\\multicolumn{{{len(cols)}}}{{@{{}}l}}{{\\textit{{{text}}}}} \\\\")
            else:
                out.append(text)
        out += [r"\bottomrule", r"\end{tabular}}%",
                r"\ifdim\wd\topooptbox>\linewidth"
                r"\typeout{topoopt-milp: table of \the\wd\topooptbox\space scaled to \the\linewidth}"
                r"\resizebox{\linewidth}{!}{\usebox{\topooptbox}}\else\usebox{\topooptbox}\fi",
                f"\\end{{{env}}}"]
        if k < len(chunks) - 1:  # each float fills a page: flush them so that a long table
            out.append(r"\clearpage")  # never passes LaTeX's 18 unprocessed floats
    return "\n".join(out) + "\n"


def _latex_header(column: str, numeric: bool) -> str:
    lines = [latex_escape(t) for t in header(column, latex=True).split("\n")]
    if len(lines) == 1:
        return lines[0]
    pos = "r" if numeric else "l"
    return f"\\begin{{tabular}}[b]{{@{{}}{pos}@{{}}}}" + r" \\ ".join(lines) + r"\end{tabular}"


def join_tables(parts: Sequence[str]) -> str:
    """Several rendered LaTeX tables as one file (the header comment once)."""
    out = []
    for k, p in enumerate(parts):
        lines = p.splitlines()
        out.extend(lines if k == 0 else lines[2:])
    return "\n".join(out) + "\n"
