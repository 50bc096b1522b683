"""What every page must pass on a phone and for a screen reader, read in the browser:
no sideways scroll of the whole page, no serious or critical axe-core finding (WCAG 2.1 A and AA),
and keyboard moves that reach a control.

axe-core comes from npm (package.json's devDependencies; `make install` runs `npm ci`) and is
injected into each page; nothing is fetched from the network.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Browser, Page, ViewportSize

from tests.browser.conftest import Student

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PHONE: ViewportSize = {"width": 390, "height": 844}
TABLET: ViewportSize = {"width": 768, "height": 1024}
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_path() -> Path:
    if not AXE.is_file():
        pytest.fail("axe-core is missing: run `make install` (it runs `npm ci`)")
    return AXE


def serious_violations(page: Page) -> list[str]:
    """axe-core's serious and critical WCAG 2.1 A/AA findings on the page as it is now, one line
    each: the rule, what it asks, and the first elements that break it."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(axe_path()))
    found = page.evaluate(
        """async (tags) => {
          const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
          return result.violations
            .filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => `${v.impact} ${v.id}: ${v.help} at `
                      + v.nodes.slice(0, 4).map(n => n.target.join(' ')).join(', '));
        }""",
        WCAG,
    )
    return [str(line) for line in found]


def sideways_overflow(page: Page) -> list[str]:
    """Empty when the page itself does not scroll sideways; otherwise how far, and the widest
    elements that stick out of the window (not counting what scrolls inside its own box)."""
    return list(
        page.evaluate(
            """() => {
              const root = document.documentElement;
              const extra = root.scrollWidth - root.clientWidth;
              if (extra <= 0) return [];
              const inScroller = (el) => {
                for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
                  const x = getComputedStyle(p).overflowX;
                  if (x === 'auto' || x === 'scroll' || x === 'hidden') return true;
                }
                return false;
              };
              const out = [...document.body.querySelectorAll('*')]
                .filter(el => el.getBoundingClientRect().right > root.clientWidth + 1
                              && !inScroller(el))
                .slice(0, 5)
                .map(el => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}`
                           + `${el.className && typeof el.className === 'string'
                                ? '.' + el.className.trim().split(/\\s+/).join('.') : ''}`
                           + ` right=${Math.round(el.getBoundingClientRect().right)}`);
              return [`page is ${extra}px wider than the window`, ...out];
            }"""
        )
    )


def tab_to(page: Page, selector: str, *, most: int = 80, backwards: bool = False) -> None:
    """Press Tab (or Shift+Tab) until the focused element matches `selector`, as a keyboard
    user would; fails if it is never reached, which means the keyboard cannot get there."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(most):
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press(key)
    pytest.fail(f"{most} presses of {key} never reached {selector} on {page.url}")


def focus_is_visible(page: Page) -> bool:
    """The focused element draws an outline or a box shadow (the site's :focus-visible ring)."""
    return bool(
        page.evaluate(
            """() => {
              const el = document.activeElement;
              if (!el || el === document.body) return false;
              const s = getComputedStyle(el);
              return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0)
                     || s.boxShadow !== 'none';
            }"""
        )
    )


def visitor(
    browser: Browser, base_url: str, shots: Path, language: str, viewport: ViewportSize = PHONE
) -> Student:
    """A browser context that is not logged in, in one language (the login page's visitor)."""
    context = browser.new_context(
        locale="zh-CN" if language.startswith("zh") else "en-US", viewport=viewport
    )
    context.add_cookies(
        [{"name": settings.LANGUAGE_COOKIE_NAME, "value": language, "url": base_url}]
    )
    return Student(context, base_url, shots, language)


def hidden_key_columns(page: Page) -> tuple[list[str], int]:
    """In every table that scrolls sideways in its own box, the first column (whose row it is)
    stays in view when the box is scrolled to its far end, and a gradebook's total stays in
    view at its start; in a table shown as cards, no cell sticks out of the window. Also says
    how many boxes did scroll, so a caller can tell the check was not empty."""
    found = page.evaluate(
        """() => {
              const out = [];
              let scrolled = 0;
              const name = (el) => el.id || el.className || el.tagName.toLowerCase();
              for (const box of document.querySelectorAll(
                  'main .table-scroll, main .table-wrap, main .gradebook-scroll')) {
                const table = box.querySelector('table');
                if (!table || box.scrollWidth <= box.clientWidth + 1) continue;
                scrolled += 1;
                const edge = box.getBoundingClientRect();
                box.scrollLeft = box.scrollWidth;
                for (const row of table.querySelectorAll('tr')) {
                  const first = row.firstElementChild;
                  if (!first || first.colSpan > 1) continue;  // "nothing here" spans the row
                  if (first.getBoundingClientRect().left < edge.left - 1) {
                    out.push(`first column of ${name(table)} scrolls out of view`);
                    break;
                  }
                }
                box.scrollLeft = 0;
                for (const total of table.querySelectorAll('.gb-total')) {
                  if (total.getBoundingClientRect().right > edge.right + 1) {
                    out.push(`the total of ${name(table)} is out of view`);
                    break;
                  }
                }
              }
              const width = document.documentElement.clientWidth;
              for (const cell of document.querySelectorAll('main table.cards td')) {
                if (cell.getBoundingClientRect().right > width + 1) {
                  out.push(`a card's ${cell.dataset.label || 'cell'} sticks out of the window`);
                  break;
                }
              }
              return [out, scrolled];
            }"""
    )
    return [str(line) for line in found[0]], int(found[1])
