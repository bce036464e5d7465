"""`--help` reads as paragraphs at any width: hard-wrapped docstring lines are joined, laid-out lines
(examples, bullets, numbered items, the line after a colon) keep their breaks."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from shoparena.cli import app
from shoparena.cli.help_text import NO_REWRAP, keep_indents, reflow, stands_alone


def test_prose_lines_are_joined_and_paragraphs_kept():
    text = "First line of a\nparagraph that goes on.\n\nSecond\nparagraph."
    assert reflow(text) == "First line of a paragraph that goes on.\n\nSecond paragraph."


def test_examples_bullets_and_the_line_after_a_colon_keep_their_breaks():
    text = (
        "Examples:\n"
        "  shoparena catalog build --products 20 \\\n"
        "      --out cat/\n"
        "shoparena search cat/ shoes\n\n"
        "Rules:\n- one\n- two that goes\non\n1. first\n2) second"
    )
    assert reflow(text) == (
        "Examples:\n"
        "  shoparena catalog build --products 20 \\\n"
        "      --out cat/\n"
        "shoparena search cat/ shoes\n\n"
        "Rules:\n- one\n- two that goes on\n1. first\n2) second"
    )


def test_a_no_rewrap_paragraph_is_left_verbatim():
    text = f"{NO_REWRAP}\na\nb\n\nc\nd"
    assert reflow(text) == f"{NO_REWRAP}\na\nb\n\nc d"


words = st.text(alphabet="abcdefghij:-.1 ", min_size=1, max_size=12).filter(lambda w: w.strip())
docs = st.lists(st.lists(words, min_size=1, max_size=6), min_size=1, max_size=4).map(
    lambda paragraphs: "\n\n".join("\n".join(lines) for lines in paragraphs)
)


@given(docs)
def test_reflow_keeps_every_word_in_order_and_is_idempotent(text):
    once = reflow(text)
    assert once.split() == text.split()
    assert once.count("\n\n") == text.count("\n\n")
    assert reflow(once) == once


@given(docs)
def test_a_line_that_stands_alone_still_starts_a_line(text):
    kept = set(reflow(text).split("\n"))
    for paragraph in text.split("\n\n"):
        for line in paragraph.split("\n")[1:]:
            if stands_alone(line):
                assert line in kept or any(k.startswith(line) for k in kept)


def test_loop_help_at_80_columns_has_no_stub_lines():
    result = CliRunner().invoke(app, ["loop", "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    flat = re.sub(r"\s+", " ", result.output)
    assert "the real signed API, admission, the sandbox, validators" in flat
    # No line of the description is a stub left over from a second wrap (under 40 chars followed by a
    # line that continues the same sentence).
    lines = [line.strip() for line in result.output.split("Options")[0].splitlines()]
    for line, following in itertools.pairwise(lines):
        if line and following and following[0].islower():
            assert len(line) > 40, f"stub line {line!r} before {following!r}"


def _click_commands():
    """(path, click command) for every command and group of the app, the app itself first (path [])."""
    import typer

    from shoparena.cli.lazy import walk_commands

    return [(list(path), command) for path, command in walk_commands(typer.main.get_command(app))]


def test_every_command_help_renders():
    paths = [path for path, _command in _click_commands() if path]
    assert len(paths) > 40
    for path in paths:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output


def test_no_help_text_loses_words_to_rich_markup():
    """Typer renders help as Rich markup, where `[default: …]` or `[index]` is a style tag, silently
    dropped (`SQLite file path .`): brackets meant literally are written `\\[`."""
    from rich.text import Text

    lost = []
    for path, command in _click_commands():
        texts = [("help", command.help or "")]
        texts += [(param.name, getattr(param, "help", None) or "") for param in command.params]
        for name, text in texts:
            if Text.from_markup(text).plain != text.replace("\\[", "["):
                lost.append((" ".join(path), name, text))
    assert lost == []


def test_store_help_shows_its_default_and_arena_init_its_own_dir():
    result = CliRunner().invoke(app, ["store", "export", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    flat = re.sub(r"[\s│]+", " ", result.output)
    assert "a SQLite file path [default: $SHOPARENA_STORE or ./shoparena.db]." in flat
    assert "file path ." not in flat
    result = CliRunner().invoke(app, ["arena", "init", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    flat = re.sub(r"[\s│]+", " ", result.output)
    assert "trajectory store [default: arena.db in --dir]; postgresql://" in flat
    assert "`arena init` made it" not in flat and "The arena directory to make" in flat


EXAMPLED = [
    ["search"],
    ["product"],
    ["tools"],
    ["store", "ingest"],
    ["store", "export"],
    ["store", "invalidate"],
    ["store", "stats"],
    ["catalog", "build"],
    ["catalog", "push-es"],
    ["catalog", "stats"],
]


@pytest.mark.parametrize("path", EXAMPLED, ids=" ".join)
def test_help_has_examples_of_the_command_itself(path):
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0
    assert "Examples:" in result.output
    after = result.output.split("Examples:", 1)[1]
    assert f"shoparena {' '.join(path)} " in after.split("╭")[0] or f"shoparena {' '.join(path)}\n" in after


def _examples(help_text: str) -> list[str]:
    """The command lines of a help's "Examples:" paragraph, continuation lines (`\\`) joined."""
    lines, current = [], ""
    section = help_text.split("Examples:\n", 1)[1].split("\n\n", 1)[0]
    for line in section.splitlines():
        current = f"{current} {line.strip()}".strip()
        if current.endswith("\\"):
            current = current[:-1].strip()
            continue
        lines.append(current)
        current = ""
    return lines


def _parse(root, example: str) -> list[str]:
    """The command path an example line names, after its arguments parsed as that command parses them
    (an unknown option, a bad value or a missing required one raises)."""
    import shlex

    words = shlex.split(example)
    assert words[0] == "shoparena", example
    command, path, args = root, [], words[1:]
    while hasattr(command, "list_commands"):
        command = command.get_command(None, args[0])
        assert command is not None, example
        path.append(args.pop(0))
    command.make_context(" ".join(path), args)
    return path


def test_every_arena_miner_validator_keys_and_model_command_has_examples_that_parse():
    """Each has an "Examples:" paragraph with an example of itself; every example is a command line the
    command it names accepts as written."""
    commands = _click_commands()
    root = commands[0][1]
    for group in ("arena", "miner", "validator", "keys", "model"):
        leaves = [(p, c) for p, c in commands if p[:1] == [group] and not hasattr(c, "list_commands")]
        for path, command in leaves:
            assert command.help and "Examples:\n" in command.help, f"shoparena {' '.join(path)}: no Examples"
            named = [_parse(root, example) for example in _examples(command.help)]
            assert path in named, f"shoparena {' '.join(path)}: no example of itself"


def test_examples_after_a_one_line_summary_keep_their_indent():
    """Typer dedents the text after the summary; a summary plus "Examples:" alone lost the indent."""
    result = CliRunner().invoke(app, ["arena", "check", "--help"], env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    heading = next(line for line in lines if "Examples:" in line)
    example = next(line for line in lines if "shoparena arena check agent.py" in line)
    assert example.index("shoparena") > heading.index("Examples:")


@given(docs)
def test_keep_indents_adds_one_line_break_before_the_second_paragraph_only(text):
    kept = keep_indents(text)
    assert kept == text if "\n\n" not in text else kept.replace("\n\n\n", "\n\n", 1) == text
