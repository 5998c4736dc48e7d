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
    "02": (
        Question("When does `Trainer` turn activation checkpointing on?",
                 ["when `Trainer(...)` is built", "when `train()` starts", "when `evaluate()` runs"],
                 answer=1, why="Section 3 printed `False` once the trainer was built and `True` after `train()`: measure the model after training starts."),
        Question("Same seed, same data: what does checkpointing change in the accuracy and F1 the model reaches?",
                 ["it lowers them a little, as a price for the memory", "nothing: the same operations run on the same inputs",
                  "it raises them, as a regularizer would"],
                 answer=1, why="Checkpointing recomputes the same values it deleted, so the gradients and the metrics agree (section 4 measured both runs)."),
        Question("About how many FLOPs does one training step with checkpointing cost, against one without?",
                 ["the same", "4/3", "twice"],
                 answer=1, why="Forward 1, backward about 2, plus one more forward of the layers: (1 + 2 + 1) / (1 + 2)."),
        Question("The slide's `TrainingArguments(..., evaluation_strategy=\"epoch\")` on today's transformers:",
                 ["works as written", "warns that the name is deprecated", "raises a TypeError: the argument is now `eval_strategy`"],
                 answer=2, why="`evaluation_strategy` was removed in transformers 4.51; `gradient_checkpointing=True` still works but warns."),
    ),
    "03": (
        Question("Inside `accelerator.accumulate(model)` with 2 accumulation steps, what does `optimizer.step()` do on the first micro-batch?",
                 ["it updates the weights with half the gradient", "nothing: the prepared optimizer skips its step until the last micro-batch",
                  "it raises an error"],
                 answer=1, why="The prepared optimizer steps only when the gradients are synchronized, on the last micro-batch; the scheduler follows it."),
        Question("With 2 accumulation steps, a linear schedule sized `len(dataloader) * epochs` ends where?",
                 ["at zero", "at half the peak learning rate", "at twice the peak"],
                 answer=1, why="It counts micro-batches but steps once per optimizer step, so it gets half way: section 2 measured it."),
        Question("Dropout on, same seed, same batch: the gradients with checkpointing, against those without, are",
                 ["identical to the last bit", "equal within float32 rounding", "different: dropout draws new masks when the layer reruns"],
                 answer=0, why="Checkpointing restores the random state before it recomputes, so dropout draws the same masks (section 3)."),
        Question("Two micro-batches of 8, accumulated, against one batch of the same 16 rows: the gradients are",
                 ["identical to the last bit", "equal within float32 rounding", "twice as large"],
                 answer=1, why="The sums run in a different order (two products and an addition), and floating-point addition is not associative (section 4)."),
    ),
    "04": (
        Question("What does Local SGD average between the processes every K steps?",
                 ["the gradients", "the model's parameters", "the losses"],
                 answer=1, why="Each process takes K optimizer steps on its own, then the parameters are averaged with one all-reduce."),
        Question("Which process is the slide's \"driver node\" in data parallel training?",
                 ["rank 0, which collects the gradients and sends back the average", "none: an all-reduce is symmetric, every process sends and receives",
                  "the fastest process"],
                 answer=1, why="DDP all-reduces the gradients peer to peer, and LocalSGD the parameters: every process ends with the same average."),
        Question("`LocalSGD` in a run with one process:",
                 ["averages every K steps as usual", "does nothing: there is no other copy to average with", "raises an error"],
                 answer=1, why="With one process the averaging is skipped; a launch that starts fewer processes than you meant trains without any."),
        Question("Raising K from 4 to 16 for the same number of steps:",
                 ["a quarter of the synchronizations, and the copies drift further apart in between",
                  "4 times the synchronizations", "the same loss whatever K, for free"],
                 answer=0, why="Fewer averages mean less communication; the price is the drift between them, which section 4 measured as loss."),
    ),
}
