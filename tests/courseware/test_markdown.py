"""Instructors' Markdown: Chinese lines wrapped in the source join without a stray space;
code, lists, tables and English text keep their lines; raw HTML is escaped."""

from __future__ import annotations

from courseware.markdown import join_wide_lines, render_markdown, without_title


def test_wrapped_chinese_lines_join_without_a_space() -> None:
    assert join_wide_lines("算术强度低的算子\n在等待数据。") == "算术强度低的算子在等待数据。"
    assert (
        render_markdown("算术强度低的算子\n在等待数据。") == "<p>算术强度低的算子在等待数据。</p>\n"
    )


def test_full_width_punctuation_counts_as_wide() -> None:
    assert join_wide_lines("拐点约为 153，\n因此它是 memory-bound。") == (
        "拐点约为 153，因此它是 memory-bound。"
    )


def test_a_break_next_to_latin_text_stays() -> None:
    # A browser shows this break as the space that belongs between the words.
    source = "受带宽限制的 kernel\n等待 HBM。\nThe kernel waits\non HBM."
    assert join_wide_lines(source) == source


def test_english_paragraphs_are_untouched() -> None:
    source = "A kernel waits on memory\nwhen its intensity is low."
    assert join_wide_lines(source) == source
    assert render_markdown(source) == (
        "<p>A kernel waits on memory\nwhen its intensity is low.</p>\n"
    )


def test_code_fences_keep_their_lines() -> None:
    source = "说明如下：\n```\n# 第一行注释\n# 第二行注释\n```\n之后的文字"
    assert join_wide_lines(source) == source


def test_list_items_headings_and_quotes_are_not_joined_to_the_line_before() -> None:
    source = "常见算子：\n- 向量加法\n- 层归一化\n1. 第一\n2. 第二\n# 标题\n> 引用"
    assert join_wide_lines(source) == source


def test_a_hard_break_stays() -> None:
    source = "第一行  \n第二行"
    assert join_wide_lines(source) == source
    assert "<br />" in render_markdown(source)


def test_raw_html_is_escaped() -> None:
    html = render_markdown('<script>alert("x")</script> 与 <b>粗体</b>')
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html and "&lt;b&gt;" in html


def test_empty_or_missing_source_renders_nothing() -> None:
    assert render_markdown(None) == "" and render_markdown("") == ""


def test_a_leading_title_is_dropped_and_other_text_kept() -> None:
    assert without_title("# 标题\n正文") == "正文"
    assert without_title("正文\n# 不是开头") == "正文\n# 不是开头"
