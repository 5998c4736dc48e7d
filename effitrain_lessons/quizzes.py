"""The self-check quiz of every lesson, shown by `lesson_quiz("NN")` at the lesson's practice.

The questions live here, not in the lessons' cells, so that the answers are not in view and each
edition can ask them in its own language. Each `why` is shown once the right answer is found.
"""

from __future__ import annotations

from effitrain_lessons.quiz import Question

QUIZZES: dict[str, tuple[Question, ...]] = {
    "00": (
        Question("What does `saved_bytes` count?",
                 ["every byte the step allocates", "the activations autograd keeps from the forward pass for the backward pass",
                  "the model's parameters and gradients"],
                 answer=1, why="Parameters and gradients exist whether or not a step runs; the saved activations are what checkpointing removes."),
        Question("The step's `flops` are what `FlopCounterMode` counts. Which work is in them?",
                 ["matrix products (and convolutions, attention)", "every operation, activations and dropout included", "only the forward pass"],
                 answer=0, why="FlopCounterMode counts matrix products, never elementwise work, in the forward and the backward pass."),
        Question("Why do the lessons train on generated sentence pairs and not on the real MRPC?",
                 ["the real MRPC is too small", "generated data makes checkpointing save more memory",
                  "they run offline and in seconds on a CPU, with the real data's columns and task"],
                 answer=2, why="The real MRPC needs a network; the generated pairs have its shape, and `load_mrpc(source=\"hub\")` loads the real one online."),
    ),
    "01": (
        Question("With `checkpoint(abc, x, weight, use_reentrant=False)`, how many times is B computed in one training step?",
                 ["once", "twice: in the forward pass and again in the backward pass", "never: checkpoint keeps it"],
                 answer=1, why="Checkpoint deletes A and B after the forward pass and reruns `abc` in the backward pass to get them back."),
        Question("A selective policy answers `MUST_SAVE` for B. Who holds B between the passes?",
                 ["autograd, through its saved tensors", "nobody: B is recomputed", "the cache of `create_selective_checkpoint_contexts`"],
                 answer=2, why="That cache is why saved-tensor hooks see nothing and `trace_step` looks at what stays alive instead."),
        Question("A chain of 36 equal blocks, checkpointed with `checkpoint_sequential`. Which number of segments keeps the least activation memory?",
                 ["6", "1", "36"], answer=0,
                 why="Memory goes as n/k + k, smallest at k = sqrt(36) = 6; k = 36 keeps every block's input, as much as no checkpointing."),
        Question("You call `model.eval()` on a BERT with checkpointing enabled, then run forward and backward. What does checkpointing save?",
                 ["the same as in `train()` mode", "everything but the attention", "nothing: Hugging Face models checkpoint only while training"],
                 answer=2, why="The layers check `self.training` before they checkpoint (section 5 measured it)."),
    ),
}
