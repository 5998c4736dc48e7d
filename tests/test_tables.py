"""The one table every result prints itself with, the one argument check, and command lines built
from configs."""

import dataclasses

import pytest

from effitrain_lessons.shared.arguments import command_line, whole_numbers
from effitrain_lessons.shared.tables import ShowsAsTable, Table


def test_a_table_aligns_its_columns_and_keeps_its_notes():
    table = Table(
        ["run", "syncs"], [["data parallel", 112], ["K = 8", 15]], title="2 processes", notes=["a note"]
    )
    lines = str(table).splitlines()
    assert lines[0] == "2 processes"
    assert lines[1] == "run            syncs" and lines[2] == "-------------  -----"
    assert lines[3] == "data parallel  112" and lines[4] == "K = 8          15"
    assert lines[-2:] == ["", "a note"]


def test_a_table_escapes_html_and_refuses_ragged_rows():
    html = Table(["a<b"], [["<script>"]], title="t&t")._repr_html_()
    assert "&lt;script&gt;" in html and "<th>a&lt;b</th>" in html and "<caption>t&amp;t</caption>" in html
    with pytest.raises(ValueError, match="A row has 1 cells for 2 columns"):
        Table(["a", "b"], [[1]])


@pytest.mark.parametrize("value", [0, -3, 1.5, True, "8", None])
def test_whole_numbers_refuses_what_is_not_a_count(value):
    with pytest.raises(ValueError, match=f"steps must be a whole number of at least 1, got {value!r}."):
        whole_numbers(batch=8, steps=value)


def test_whole_numbers_accepts_counts():
    assert whole_numbers(batch=1, steps=10**6) is None


@dataclasses.dataclass
class Config:
    batch_size: int = 16
    learning_rate: float | None = None
    mode: str = dataclasses.field(
        default="ddp", metadata={"choices": ("ddp", "local_sgd"), "help": "how to synchronize"}
    )
    checkpointing: bool = True


def test_a_command_line_is_built_from_a_config_dataclass():
    assert command_line(Config, []) == Config()
    parsed = command_line(
        Config, ["--batch-size", "8", "--learning-rate", "0.5", "--mode", "local_sgd", "--no-checkpointing"]
    )
    assert parsed == Config(batch_size=8, learning_rate=0.5, mode="local_sgd", checkpointing=False)


def test_the_command_line_refuses_what_the_config_does_not_allow(capsys):
    for argv in (["--mode", "gossip"], ["--batch-size", "eight"], ["--steps", "3"]):
        with pytest.raises(SystemExit):
            command_line(Config, argv, prog="train")
    assert "invalid choice: 'gossip'" in capsys.readouterr().err


def test_a_table_shows_as_its_text_where_html_cannot_show():
    table = Table(["k", "bytes"], [[1, "2 KiB"]], title="t")
    assert repr(table) == str(table) == "t\nk  bytes\n-  -----\n1  2 KiB"


def test_a_result_shows_as_its_table():
    @dataclasses.dataclass(frozen=True)
    class Measured(ShowsAsTable):
        n: int

        def table(self) -> Table:
            return Table(["n"], [[self.n]])

    @dataclasses.dataclass(repr=False)
    class Run(ShowsAsTable):
        n: int

        def table(self) -> Table:
            return Table(["n"], [[self.n]])

    measured = Measured(3)
    assert str(measured) == "n\n-\n3" and measured._repr_html_() == Measured(3).table()._repr_html_()
    assert repr(measured).endswith("Measured(n=3)")  # a dataclass keeps its fields where a repr is asked for
    assert repr(Run(4)) == str(Run(4)) == "n\n-\n4"  # one made with repr=False shows its table there too
