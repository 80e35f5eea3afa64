"""Markdown renderer: the assistant's answers via markdown-it-py, code highlighted by Pygments.

Renders ``markdown`` blocks (``data["breaks"]`` keeps every line break, for panels of
plain lines): headings, paragraphs with inline code/bold/italic/strike/links,
nested bullet and numbered lists, task items, quotes, fenced code (an unclosed fence renders
as a growing code block), rules and tables.  Code lines start at column 0 with no border, so
text copied from the terminal is the code itself.

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
TABLE_MAX_ROWS = 200

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


def _style_for(token_type: Any) -> str:
    name = str(token_type).replace("Token.", "")
    for prefix, style in _TOKEN_STYLES:
        if name == prefix or name.startswith(prefix + "."):
            return style
    return "md-codeblock"


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


def highlight(code: str, lang: str) -> list[Any]:
    """Pygments markup for ``code``; plain code style for unknown languages or huge input."""
    lang = (lang or "").strip().split()[0] if lang else ""
    if not lang or len(code) > HIGHLIGHT_MAX_CHARS or any(
            len(line) > HIGHLIGHT_MAX_LINE for line in code.split("\n")):
        return [("md-codeblock", code)]
    try:
        if lang not in _lexers:
            _lexers[lang] = _lexer(lang)
        lexer = _lexers[lang]
        if lexer is None:
            return [("md-codeblock", code)]
        out: list[Any] = []
        for token_type, value in lexer.get_tokens(code):
            if value:
                out.append((_style_for(token_type), value))
        return out or [""]
    except Exception:
        return [("md-codeblock", code)]


# ---- blocks ---------------------------------------------------------------------------------


class _Builder:
    """Walks markdown-it's flat token list into urwid widgets."""

    def __init__(self, urwid: Any, tokens: list[Any], breaks: bool = False) -> None:
        self.u = urwid
        self.tokens = tokens
        self.breaks = breaks
        self.i = 0

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
                out.extend(self.code(tok.content.rstrip("\n"), tok.info if kind == "fence" else ""))
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
            body = u.Pile(inner or [u.Text("")])
            items.append(u.Columns([(len(mark), u.Text(("md-bullet", mark))), body]))
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

    def code(self, code: str, lang: str) -> list[Any]:
        u = self.u
        label = (lang or "").strip().split()[0] if (lang or "").strip() else ""
        top = u.Columns([("pack", u.Text(("md-fence", f"── {label} " if label else "──"))),
                         u.AttrMap(u.Divider("─"), "md-fence")])
        body = u.Text(highlight(code, label), wrap="any")
        return [top, body, u.AttrMap(u.Divider("─"), "md-fence")]

    def table(self) -> Any:
        u = self.u
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
        rows = rows[:TABLE_MAX_ROWS]
        texts = [[_plain(cell) for cell in r] for r in rows]
        ncols = max((len(r) for r in texts), default=0)
        widths = [max((len(r[c]) for r in texts if c < len(r)), default=0) for c in range(ncols)]
        out: list[Any] = []
        for n, r in enumerate(texts):
            if out:
                out.append("\n")
            cells = [(r[c] if c < len(r) else "").ljust(widths[c]) for c in range(ncols)]
            line = " | ".join(cells)
            out.append(("md-bold", line) if n < header_rows else line)
            if n == header_rows - 1:
                out.append(("md-rule", "\n" + "-+-".join("-" * w for w in widths)))
        return u.Text(out or "", wrap="any")


def _plain(markup: list[Any]) -> str:
    return "".join(m[1] if isinstance(m, tuple) else m for m in markup)


def render_segment(text: str, breaks: bool = False) -> list[Any]:
    """Widgets for one top-level piece (cached by its text)."""
    key = ("\x00" if breaks else "") + text
    hit = _cache.get(key)
    if hit is not None:
        _cache.move_to_end(key)
        return hit
    import urwid

    tokens = _parser().parse(text)
    widgets = _Builder(urwid, tokens, breaks).blocks() or [urwid.Text("")]
    _cache[key] = widgets
    if len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return widgets


def render(text: str, breaks: bool = False) -> Any:
    import urwid

    widgets: list[Any] = []
    from agent.ui.pieces import split

    for i, piece in enumerate(split(text)):
        if i:
            widgets.append(urwid.Divider())
        widgets.extend(render_segment(piece, breaks))
    if not widgets:
        return urwid.Text("")
    if len(widgets) == 1:
        return widgets[0]
    return urwid.Pile(widgets)


@hookimpl
def agent_render_block(block, width, theme):
    if block.kind != "markdown":
        return None
    return render(block.text, bool(block.data.get("breaks")))
