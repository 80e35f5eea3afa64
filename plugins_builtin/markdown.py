"""Markdown renderer: the assistant's answers via markdown-it-py, code highlighted by Pygments.

Renders ``markdown`` blocks (``data["breaks"]`` keeps every line break, for panels of
plain lines): headings, paragraphs with inline code/bold/italic/strike/links,
nested bullet and numbered lists, task items, quotes, fenced code (an unclosed fence renders
as a growing code block), rules and tables (box characters, wrapped to the width).  Code lines
start at column 0 with no border, so text copied from the terminal is the code itself.

The UI streams an answer as top-level pieces (``agent.ui.pieces``); a text given whole is cut
the same way, and each piece's widgets are cached by its text.  markdown-it and Pygments are
imported on the first render, never at startup.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from agent import hookimpl

CACHE_SIZE = 2_000
HIGHLIGHT_MAX_CHARS = 60_000
HIGHLIGHT_MAX_LINE = 2_000

_md: Any = None
_cache: OrderedDict[str, list[Any]] = OrderedDict()
_lexers: dict[str, Any] = {}  # Pygments looks lexers up slowly (~10 ms): once per language
_aliases: set[str] | None = None


def _parser() -> Any:
    global _md
    if _md is None:
        from markdown_it import MarkdownIt

        _md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return _md


# ---- inline ---------------------------------------------------------------------------------


def inline(token: Any, base: str | None = None, breaks: bool = False) -> list[Any]:
    """urwid markup for an inline token's children (``breaks``: keep soft line breaks)."""
    out: list[Any] = []
    stack: list[str] = [base] if base else []
    link: list[str] = []
    for child in token.children or []:
        kind = child.type
        style = stack[-1] if stack else None
        if kind == "text":
            _push(out, style, child.content)
        elif kind == "code_inline":
            out.append(("md-code", child.content))
        elif kind in ("strong_open", "em_open", "s_open"):
            stack.append({"strong_open": "md-bold", "em_open": "md-italic",
                          "s_open": "md-strike"}[kind])
        elif kind in ("strong_close", "em_close", "s_close"):
            if stack and stack[-1] != base:
                stack.pop()
        elif kind == "link_open":
            link.append(str(child.attrs.get("href", "")))
            stack.append("md-link")
            link.append(str(len(out)))
        elif kind == "link_close":
            start = int(link.pop()) if link else len(out)
            href = link.pop() if link else ""
            if stack and stack[-1] == "md-link":
                stack.pop()
            shown = "".join(t[1] if isinstance(t, tuple) else t for t in out[start:])
            if href and href != shown and not href.startswith("#"):
                out.append(("dim", f" ({href})"))
        elif kind == "softbreak":
            _push(out, style, "\n" if breaks else " ")
        elif kind == "hardbreak":
            _push(out, style, "\n")
        elif kind == "image":
            _push(out, "dim", f"[image: {child.content or child.attrs.get('src', '')}]")
        elif kind == "html_inline":
            _push(out, style, child.content)
        else:
            _push(out, style, child.content or "")
    return out or [""]


def _push(out: list[Any], style: str | None, text: str) -> None:
    if not text:
        return
    out.append((style, text) if style else text)


# ---- code ---------------------------------------------------------------------------------

_TOKEN_STYLES = (
    ("Comment", "pyg-comment"), ("Keyword", "pyg-keyword"), ("Name.Builtin", "pyg-builtin"),
    ("Name.Function", "pyg-function"), ("Name.Class", "pyg-class"),
    ("Name.Decorator", "pyg-function"), ("Literal.String", "pyg-string"),
    ("Literal.Number", "pyg-number"), ("Operator", "pyg-operator"), ("Error", "pyg-error"),
    ("Name", "pyg-name"),
)


_styles: dict[Any, str] = {}


def _style_for(token_type: Any) -> str:
    style = _styles.get(token_type)
    if style is None:
        name = str(token_type).replace("Token.", "")
        style = next((s for prefix, s in _TOKEN_STYLES
                      if name == prefix or name.startswith(prefix + ".")), "md-codeblock")
        _styles[token_type] = style
    return style


def _lexer(lang: str) -> Any:
    """Pygments' own lexer for ``lang``, or None.  Only builtin aliases are looked up: an
    unknown name (a fence's info string still streaming in: ``p``, ``py``...) would make
    Pygments import every installed lexer plugin, which can take a third of a second."""
    global _aliases
    from pygments.lexers import get_lexer_by_name
    from pygments.lexers._mapping import LEXERS
    from pygments.util import ClassNotFound

    if _aliases is None:
        _aliases = {alias for entry in LEXERS.values() for alias in entry[2]}
    if lang.lower() not in _aliases:
        return None
    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def highlight(code: str, lang: str, streaming: bool = False) -> list[Any]:
    """Pygments markup for ``code``; plain code style for unknown languages or huge input.

    ``streaming``: the code is still growing (its block is not final).  It is then lexed in
    runs of ``STREAM_RUN`` lines, each cached, so a frame lexes only the newest line; a
    multi-line string may be coloured wrongly until the block is final, when it is lexed
    whole."""
    lang = (lang or "").strip().split()[0] if lang else ""
    if not lang or len(code) > HIGHLIGHT_MAX_CHARS or any(
            len(line) > HIGHLIGHT_MAX_LINE for line in code.split("\n")):
        return [("md-codeblock", code)]
    if lang not in _lexers:
        try:
            _lexers[lang] = _lexer(lang)
        except Exception:
            _lexers[lang] = None
    if _lexers[lang] is None:
        return [("md-codeblock", code)]
    if not streaming:
        return _lex(code, lang)
    lines = code.split("\n")
    out: list[Any] = []
    for n in range(0, len(lines), STREAM_RUN):
        run = "\n".join(lines[n:n + STREAM_RUN])
        if n + STREAM_RUN < len(lines):
            run += "\n"
            key = (lang, run)
            hit = _runs.get(key)
            if hit is None:
                hit = _runs[key] = _lex(run, lang)
                if len(_runs) > CACHE_SIZE:
                    _runs.pop(next(iter(_runs)))
            out.extend(hit)
        else:
            out.extend(_lex(run, lang))
    return out or [""]


STREAM_RUN = 1
_runs: dict[tuple[str, str], list[Any]] = {}


def _lex(code: str, lang: str) -> list[Any]:
    """Pygments markup, runs of one style merged (fewer, longer runs draw faster)."""
    try:
        out: list[Any] = []
        last = None
        for token_type, value in _lexers[lang].get_tokens(code):
            if not value:
                continue
            style = _style_for(token_type)
            if style == last:
                out[-1] = (style, out[-1][1] + value)
            else:
                out.append((style, value))
                last = style
        return out or [""]
    except Exception:
        return [("md-codeblock", code)]


# ---- blocks ---------------------------------------------------------------------------------


class _Builder:
    """Walks markdown-it's flat token list into urwid widgets."""

    def __init__(self, urwid: Any, tokens: list[Any], breaks: bool = False,
                 parts: frozenset[str] = frozenset()) -> None:
        self.u = urwid
        self.streaming = "streaming" in parts
        self.tokens = tokens
        self.breaks = breaks
        self.i = 0
        # A chunk of a longer answer (see agent.ui.pieces): which rules and header rows
        # belong to the blocks above or below and are not drawn here.
        self.skip_top = "fence_cont" in parts
        self.skip_bottom = "fence_open" in parts
        self.skip_head = "table_cont" in parts
        self.skip_table_bottom = "table_open" in parts
        fences = [n for n, t in enumerate(tokens) if t.type in ("fence", "code_block")]
        self.first_fence = fences[0] if fences else -1
        self.last_fence = fences[-1] if fences else -1
        self.first_table = True

    def inline(self, token: Any, base: str | None = None) -> list[Any]:
        return inline(token, base, self.breaks)

    def blocks(self, until: str | None = None) -> list[Any]:
        u = self.u
        out: list[Any] = []
        while self.i < len(self.tokens):
            tok = self.tokens[self.i]
            kind = tok.type
            if until and kind == until:
                self.i += 1
                return out
            self.i += 1
            if kind == "heading_open":
                level = int(tok.tag[1])
                style = {1: "md-h1", 2: "md-h2"}.get(level, "md-h3")
                text = self.tokens[self.i]
                self.i += 2  # inline + heading_close
                if level == 1 and out:
                    out.append(u.Divider())
                out.append(u.Text(self.inline(text, style)))
            elif kind == "paragraph_open":
                text = self.tokens[self.i]
                self.i += 2
                out.append(u.Text(self.inline(text)))
            elif kind in ("bullet_list_open", "ordered_list_open"):
                out.extend(self.list_items(kind == "ordered_list_open",
                                           "bullet_list_close" if kind[0] == "b"
                                           else "ordered_list_close"))
            elif kind == "blockquote_open":
                inner = self.blocks("blockquote_close")
                body = u.AttrMap(u.Pile(inner or [u.Text("")]), "md-quote")
                out.append(u.Columns([(2, u.Text(("md-quote", "| "))), body]))
            elif kind in ("fence", "code_block"):
                out.extend(self.code(tok.content.rstrip("\n"),
                                     tok.info if kind == "fence" else "",
                                     top=not (self.skip_top and self.i - 1 == self.first_fence),
                                     bottom=not (self.skip_bottom
                                                 and self.i - 1 == self.last_fence)))
            elif kind == "hr":
                out.append(u.AttrMap(u.Divider("─"), "md-rule"))
            elif kind == "table_open":
                out.append(self.table())
            elif kind == "html_block":
                out.append(u.Text(tok.content.rstrip("\n")))
            elif kind == "inline":
                out.append(u.Text(self.inline(tok)))
        return out

    def list_items(self, ordered: bool, close: str) -> list[Any]:
        u = self.u
        items: list[Any] = []
        while self.i < len(self.tokens):
            tok = self.tokens[self.i]
            self.i += 1
            if tok.type == close:
                break
            if tok.type != "list_item_open":
                continue
            mark = f"{tok.info}{tok.markup} " if ordered else "- "
            inner = self.blocks("list_item_close")
            inner = self._task(inner)
            body = inner[0] if len(inner) == 1 else _stack(inner or [u.Text("")])
            items.append(_hanging(u, mark, body))
        return items

    def _task(self, inner: list[Any]) -> list[Any]:
        """``[ ] todo`` / ``[x] done`` at the start of an item."""
        if not inner or not isinstance(inner[0], self.u.Text):
            return inner
        text, attrs = inner[0].get_text()
        if text.startswith(("[x] ", "[X] ")):
            inner[0] = self.u.Text([("md-bullet", "[x] "), ("md-done", text[4:])])
        elif text.startswith("[ ] "):
            inner[0] = self.u.Text([("md-bullet", "[ ] "), text[4:]])
        return inner

    def code(self, code: str, lang: str, top: bool = True, bottom: bool = True) -> list[Any]:
        """The fence's top rule (with its language), the code, the bottom rule; a chunk of a
        longer block leaves out the rules that belong to the chunks around it (not built at
        all: a ``Columns`` costs more to build than the code's text to lay out)."""
        u = self.u
        label = (lang or "").strip().split()[0] if (lang or "").strip() else ""
        out = []
        if top:
            out.append(u.Columns([("pack", u.Text(("md-fence", f"── {label} " if label
                                                   else "──"))),
                                  u.AttrMap(u.Divider("─"), "md-fence")]))
        out.append(u.Text(highlight(code, label, self.streaming), wrap="any"))
        if bottom:
            out.append(u.AttrMap(u.Divider("─"), "md-fence"))
        return out

    def table(self) -> Any:
        rows: list[list[list[Any]]] = []
        header_rows = 0
        row: list[list[Any]] = []
        while self.i < len(self.tokens):
            tok = self.tokens[self.i]
            self.i += 1
            if tok.type == "table_close":
                break
            if tok.type == "tr_open":
                row = []
            elif tok.type == "inline":
                row.append(self.inline(tok))
            elif tok.type == "tr_close":
                rows.append(row)
            elif tok.type == "thead_close":
                header_rows = len(rows)
        texts = [[_plain(cell) for cell in r] for r in rows]
        skip = header_rows if (self.skip_head and self.first_table) else 0
        self.first_table = False
        return _table_widget()(texts, header_rows, skip=skip, top=not self.skip_head,
                               bottom=not self.skip_table_bottom)


# ---- tables -----------------------------------------------------------------------------


def table_lines(texts: list[list[str]], header_rows: int, width: int, *, skip: int = 0,
                top: bool = True, bottom: bool = True) -> list[list[Any]]:
    """A table drawn with box characters in at most ``width`` columns, as urwid markup lines.

    Columns keep their natural width while the table fits; otherwise the widest columns share
    what is left and their cells wrap at spaces (a word longer than its column is cut).  The
    first ``skip`` rows (a repeated header) are not drawn; ``top``/``bottom`` say whether the
    table's first and last borders belong to this piece."""
    ncols = max((len(r) for r in texts), default=0)
    if ncols == 0:
        return []
    rows = [[r[c] if c < len(r) else "" for c in range(ncols)] for r in texts]
    natural = [max(1, max(_width(r[c]) for r in rows)) for c in range(ncols)]
    widths = _fit_columns(natural, width - (3 * ncols + 1))

    def border(left: str, mid: str, right: str) -> list[Any]:
        return [("md-rule", left + mid.join("─" * (w + 2) for w in widths) + right)]

    out: list[list[Any]] = []
    if top:
        out.append(border("┌", "┬", "┐"))
    for n, row in enumerate(rows):
        if n >= skip:
            wrapped = [_wrap_cell(cell, widths[c]) for c, cell in enumerate(row)]
            style = "md-bold" if n < header_rows else None
            for k in range(max(len(w) for w in wrapped)):
                line: list[Any] = [("md-rule", "│")]
                for c, cell_lines in enumerate(wrapped):
                    cell = _pad(cell_lines[k] if k < len(cell_lines) else "", widths[c])
                    line += [" ", (style, cell) if style else cell, " ", ("md-rule", "│")]
                out.append(line)
        if n == header_rows - 1 and n + 1 < len(rows) and n >= skip:
            out.append(border("├", "┼", "┤"))
    if bottom:
        out.append(border("└", "┴", "┘"))
    return out


def _fit_columns(natural: list[int], room: int) -> list[int]:
    """Column widths summing to at most ``room`` (each at least 1): columns narrower than an
    equal share keep their width, the others split the rest."""
    if sum(natural) <= room:
        return list(natural)
    widths = list(natural)
    left, open_cols = max(room, len(natural)), list(range(len(natural)))
    while open_cols:
        share = left // len(open_cols)
        narrow = [c for c in open_cols if natural[c] <= share]
        if not narrow:
            for i, c in enumerate(open_cols):  # the remainder goes to the first columns
                widths[c] = max(1, share + (1 if i < left - share * len(open_cols) else 0))
            break
        for c in narrow:
            left -= natural[c]
            open_cols.remove(c)
    return widths


def _wrap_cell(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken at spaces where it can be."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        while _width(word) > width:  # a word longer than the column: cut it
            room = width - _width(line) - (1 if line else 0)
            if room <= 0:
                lines.append(line)
                line, room = "", width
            head = _take(word, room)
            line = f"{line} {head}" if line else head
            word = word[len(head):]
            lines.append(line)
            line = ""
        if not word:
            continue
        if line and _width(line) + 1 + _width(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line or not lines:
        lines.append(line)
    return lines


def _take(word: str, width: int) -> str:
    """The longest start of ``word`` at most ``width`` columns wide (at least one character)."""
    end = 1
    while end < len(word) and _width(word[:end + 1]) <= width:
        end += 1
    return word[:end]


_table_class: Any = None


def _table_widget() -> Any:
    """The table's flow widget: laid out again for each width it is drawn at."""
    global _table_class
    if _table_class is not None:
        return _table_class
    import urwid as u

    class Table(u.Widget):
        _sizing = frozenset([u.Sizing.FLOW])
        ignore_focus = True

        def __init__(self, texts: list[list[str]], header_rows: int, **how: Any) -> None:
            super().__init__()
            self.texts, self.header_rows, self.how = texts, header_rows, how
            self._laid: tuple[int, Any] | None = None

        def _text(self, width: int) -> Any:
            if self._laid is None or self._laid[0] != width:
                lines = table_lines(self.texts, self.header_rows, width, **self.how)
                markup: list[Any] = []
                for n, line in enumerate(lines):
                    markup += (["\n"] if n else []) + line
                self._laid = (width, u.Text(markup or "", wrap="clip"))
            return self._laid[1]

        def rows(self, size: tuple[int], focus: bool = False) -> int:
            return int(self._text(size[0]).rows(size))

        def render(self, size: tuple[int], focus: bool = False) -> Any:
            return self._text(size[0]).render(size)

    _table_class = Table
    return _table_class


_widgets: Any = None


def _light() -> Any:
    """Two small flow widgets the renderer builds thousands of: urwid's ``Columns`` and
    ``Pile`` cost ten times as much to build and draw (their constructors check every child
    against a runtime Protocol), which a streaming answer pays on every frame."""
    global _widgets
    if _widgets is not None:
        return _widgets
    import urwid as u

    class Hanging(u.Widget):
        """``mark`` followed by ``body`` indented under it (a list item)."""

        _sizing = frozenset([u.Sizing.FLOW])
        ignore_focus = True

        def __init__(self, mark: str, body: Any) -> None:
            super().__init__()
            self.mark = u.Text(("md-bullet", mark), wrap="clip")
            self.indent = len(mark)
            self.body = body

        def rows(self, size: tuple[int], focus: bool = False) -> int:
            if size[0] <= self.indent:  # no room for the mark: the body alone
                return int(self.body.rows(size))
            return int(self.body.rows((size[0] - self.indent,)))

        def render(self, size: tuple[int], focus: bool = False) -> Any:
            if size[0] <= self.indent:  # a canvas must be exactly as wide as asked
                return self.body.render(size)
            inner = size[0] - self.indent
            body = self.body.render((inner,))
            mark = u.CompositeCanvas(self.mark.render((self.indent,)))
            mark.pad_trim_top_bottom(0, body.rows() - 1)
            return u.CanvasJoin([(mark, None, False, self.indent), (body, None, False, inner)])

    class Stack(u.Widget):
        """Flow widgets one under the other."""

        _sizing = frozenset([u.Sizing.FLOW])
        ignore_focus = True

        def __init__(self, children: list[Any]) -> None:
            super().__init__()
            self.children = children

        def rows(self, size: tuple[int], focus: bool = False) -> int:
            return sum(int(c.rows(size)) for c in self.children)

        def render(self, size: tuple[int], focus: bool = False) -> Any:
            return u.CanvasCombine([(c.render(size), None, False) for c in self.children])

    _widgets = (Hanging, Stack)
    return _widgets


def _hanging(u: Any, mark: str, body: Any) -> Any:
    return _light()[0](mark, body)


def _stack(children: list[Any]) -> Any:
    return _light()[1](children)


def _width(text: str) -> int:
    from urwid.str_util import calc_width

    return int(calc_width(text, 0, len(text)))


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _plain(markup: list[Any]) -> str:
    return "".join(m[1] if isinstance(m, tuple) else m for m in markup)


def render_segment(text: str, breaks: bool = False,
                   parts: frozenset[str] = frozenset()) -> list[Any]:
    """Widgets for one top-level piece (cached by its text and flags)."""
    key = ("\x00" if breaks else "") + "".join(f"\x01{p}" for p in sorted(parts)) + "\x02" + text
    hit = _cache.get(key)
    if hit is not None:
        _cache.move_to_end(key)
        return hit
    import urwid

    tokens = _parser().parse(text)
    widgets = _Builder(urwid, tokens, breaks, parts).blocks() or [urwid.Text("")]
    _cache[key] = widgets
    if len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return widgets


#: block data flags of a chunk of a longer answer (see agent.ui.pieces.Chunk.data)
CHUNK_FLAGS = ("fence_cont", "fence_open", "table_cont", "table_open")


def render(text: str, breaks: bool = False, parts: frozenset[str] = frozenset()) -> Any:
    import urwid

    widgets: list[Any] = []
    if parts - {"streaming"}:  # one chunk: a single piece by construction
        widgets.extend(render_segment(text, breaks, parts))
    else:
        from agent.ui.pieces import split

        for i, piece in enumerate(split(text)):
            if i:
                widgets.append(urwid.Divider())
            widgets.extend(render_segment(piece, breaks, parts))
    if not widgets:
        return urwid.Text("")
    if len(widgets) == 1:
        return widgets[0]
    return _stack(widgets)


@hookimpl
def agent_render_block(block, width, theme):
    if block.kind != "markdown":
        return None
    parts = frozenset(flag for flag in CHUNK_FLAGS if block.data.get(flag))
    if not block.final:
        parts |= {"streaming"}
    return render(block.text, bool(block.data.get("breaks")), parts)
