"""The HTML pages certsym writes (``certsym report``, ``certsym reproduce``): one self-contained page, readable
without scripts or network access, whose header says what wrote it and when. Every text passed in is escaped here;
``raw`` parts are markup built by these functions. Cost: linear in the text."""

from __future__ import annotations

import datetime
import html

from certsym.version import __version__

STYLE = ("body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222}"
         "h1{margin:0 0 .2em}h2{margin:1.2em 0 .4em;font-size:1.25em}.meta{color:#666;font-size:.9em}"
         ".cards{display:flex;flex-wrap:wrap;gap:12px;margin:.8em 0}.card{border:1px solid #bbb;border-radius:6px;"
         "padding:.6em .9em;min-width:230px;flex:1}.card h3{margin:0 0 .3em;font-size:1em;color:#444}"
         ".verdict{font-size:1.35em;font-weight:600}.holds{color:#1a7f37}.fails{color:#b42318}.unknown{color:#9a6700}"
         "td,th{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top}table{border-collapse:"
         "collapse;margin:.5em 0}code{background:#f4f4f4;padding:0 3px}figure{margin:.6em 0}figure img{max-width:100%;"
         "border:1px solid #ddd}figcaption{color:#555;font-size:.9em}")


def esc(text: object) -> str:
    """``text`` escaped for HTML."""
    return html.escape(str(text))


def page(title: str, body: list[str]) -> str:
    """A whole page: ``title``, a line naming certsym's version and the time of writing (UTC), then ``body``
    (markup)."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{esc(title)}</h1>"
            f"<p class='meta'>certsym {esc(__version__)}, written {esc(stamp)}</p>{''.join(body)}</body></html>")


def card(heading: str, verdict: str, tone: str, lines: list[str]) -> str:
    """A verdict box: ``tone`` "holds", "fails" or "unknown" colours the verdict; ``lines`` are plain text."""
    return (f"<div class='card'><h3>{esc(heading)}</h3><div class='verdict {esc(tone)}'>{esc(verdict)}</div>"
            + "".join(f"<div>{esc(line)}</div>" for line in lines) + "</div>")


def cards(parts: list[str]) -> str:
    return f"<div class='cards'>{''.join(parts)}</div>"


def table(head: list[str], rows: list[list[str]]) -> str:
    """A table of plain-text cells."""
    return ("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows) + "</table>")


def figure(file: str, caption: str) -> str:
    """An image file (relative to the page) with its caption."""
    src = file if file.startswith(("./", "/")) else "./" + file
    return f"<figure><img src='{esc(src)}' alt='{esc(caption)}'><figcaption>{esc(caption)}</figcaption></figure>"


def links(items: list[tuple[str, str]], summary: str | None = None) -> str:
    """A list of links (text, relative href); folded under ``summary`` when given."""
    # a relative href starts with "./": a name like "javascript:…" stays a file name, never a scheme
    body = "<ul>" + "".join(f"<li><a href='{esc(href if href.startswith(('./', '/')) else './' + href)}'>{esc(text)}"
                            "</a></li>" for text, href in items) + "</ul>"
    return f"<details><summary>{esc(summary)}</summary>{body}</details>" if summary else body
