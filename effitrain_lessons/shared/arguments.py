"""The one check every size, count and step argument in the package goes through."""

from __future__ import annotations

from effitrain_lessons.shared.i18n import phrase


def whole_numbers(**values: object) -> None:
    """Raise one sentence for the first value that is not a whole number of at least 1.

    `whole_numbers(batch=8, width=0)` raises "width must be a whole number of at least 1, got 0.".
    A bool is refused too: `True` is an int to Python, never a size to a learner.
    """
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(
                phrase("{name} must be a whole number of at least 1, got {value!r}.", name=name, value=value)
            )


def command_line(config_class, argv=None, **parser_options):
    """Parse `argv` into a `config_class` instance: one `--option` per dataclass field, written once.

    A field `batch_size: int = 16` becomes `--batch-size N`; a bool field becomes `--name` and
    `--no-name`; `float | None = None` takes a number or stays None. A field's `metadata={"help": ...}`
    is its help text, and `metadata={"choices": (...)}` limits its values.
    """
    import argparse

    parser = argparse.ArgumentParser(**parser_options)
    add_fields(parser, config_class)
    return config_class(**vars(parser.parse_args(argv)))


def add_fields(parser, config_class) -> None:
    """Add one `--option` per field of the dataclass `config_class` to `parser` (see `command_line`)."""
    import argparse
    import dataclasses
    import typing

    hints = typing.get_type_hints(config_class)
    for field in dataclasses.fields(config_class):
        if not field.init:
            continue
        kind = hints[field.name]
        allowed = [t for t in typing.get_args(kind) if t is not type(None)] or [kind]
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        option = "--" + field.name.replace("_", "-")
        help_text = field.metadata.get("help", "")
        if allowed[0] is bool:
            parser.add_argument(
                option, action=argparse.BooleanOptionalAction, default=default, help=help_text
            )
        else:
            parser.add_argument(
                option,
                type=allowed[0],
                default=default,
                choices=field.metadata.get("choices"),
                help=f"{help_text} (default: {default})".strip(),
                metavar=field.name.upper(),
            )
