"""The instructor's tooling: building the lesson editions and grading learners' notebooks.

`build` (Otter Assign masters -> learner, solution and autograder editions), `lessons` (names,
files, questions and tests), `grade` (a class of submissions, each in `sandbox` with `worker`),
`submissions` (finding and reading them), `review` (what an answer reaches for) and `report`
(grades.csv, feedback, results.json). This tooling may import the learner runtime
(`effitrain_lessons.*`); the runtime never imports it.
"""
