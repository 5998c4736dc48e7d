"""What several lessons use: the bundled data and tiny models, memory, time and FLOP measurement,
processes and their links, plotting, tables, languages, the quiz and the exercise checker.

A module here imports only other shared modules (and the manifest, `effitrain_lessons.lessons`),
never a lesson's package.
"""
