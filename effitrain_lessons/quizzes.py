"""What a self-check question is, and every lesson's questions (`lesson_quiz("NN")` shows them).

The questions live here, not in the lessons' cells, so that the answers are not in view and each
edition can ask them in its own language: every prompt, choice and `why` is marked `N_` for the
catalog and translated where the quiz shows it. Each `why` is shown once the right answer is found.
What a question is (`Question`: its choices, its answer, the feedback a learner reads) is defined
here too, beside the questions; `effitrain_lessons.quiz` shows them (widgets, or text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from effitrain_lessons.i18n import N_, _, phrase

# translated where shown: the language is chosen after import
FEEDBACK = {
    "right": N_("Right."),
    "wrong": N_("Not quite: try another answer."),
    "pick": N_("Pick an answer first."),
}


@dataclass(frozen=True)
class Question:
    """One question: `answer` is the index of the right choice, `why` the sentence shown once it is found."""

    prompt: str
    choices: Sequence[str]
    answer: int
    why: str

    def __post_init__(self) -> None:
        if len(self.choices) < 2:
            raise ValueError(
                phrase(
                    "A question needs at least two choices, got {count}: {prompt!r}.",
                    count=len(self.choices),
                    prompt=self.prompt,
                )
            )
        if not isinstance(self.answer, int) or not 0 <= self.answer < len(self.choices):
            raise ValueError(
                phrase(
                    "answer must be the index of a choice, 0 to {last}, got {answer!r}.",
                    last=len(self.choices) - 1,
                    answer=self.answer,
                )
            )

    def feedback(self, choice: int | None) -> str:
        """What the learner reads after checking `choice` (an index, or None for no answer)."""
        if choice is None:
            return _(FEEDBACK["pick"])
        return f"{_(FEEDBACK['right'])} {_(self.why)}" if choice == self.answer else _(FEEDBACK["wrong"])

    def text(self, number: int) -> str:
        lines = [f"{number}. {_(self.prompt)}"]
        lines += [f"   {letter(i)}) {_(choice)}" for i, choice in enumerate(self.choices)]
        return "\n".join(lines)


def letter(index: int) -> str:
    """The letter a choice is listed under: 0 -> "a"."""
    return chr(ord("a") + index)


QUIZZES: dict[str, tuple[Question, ...]] = {
    "00": (
        Question(
            N_("What does `saved_bytes` count?"),
            [
                N_("every byte the step allocates"),
                N_("the activations autograd keeps from the forward pass for the backward pass"),
                N_("the model's parameters and gradients"),
            ],
            answer=1,
            why=N_(
                "Parameters and gradients exist whether or not a step runs; the saved activations are what "
                "checkpointing removes."
            ),
        ),
        Question(
            N_("The step's `flops` are what `FlopCounterMode` counts. Which work is in them?"),
            [
                N_("matrix products (and convolutions, attention)"),
                N_("every operation, activations and dropout included"),
                N_("only the forward pass"),
            ],
            answer=0,
            why=N_(
                "FlopCounterMode counts matrix products, never "
                "elementwise work, in the forward and the backward pass."
            ),
        ),
        Question(
            N_("Why do the lessons train on generated sentence pairs and not on the real MRPC?"),
            [
                N_("the real MRPC is too small"),
                N_("generated data makes checkpointing save more memory"),
                N_("they run offline and in seconds on a CPU, with the real data's columns and task"),
            ],
            answer=2,
            why=N_(
                "The real MRPC needs a network; the generated pairs have its shape, and "
                '`load_mrpc(source="hub")` loads the real one online.'
            ),
        ),
    ),
    "01": (
        Question(
            N_(
                "With `checkpoint(abc, x, weight, use_reentrant=False)`, "
                "how many times is B computed in one training step?"
            ),
            [
                N_("once"),
                N_("twice: in the forward pass and again in the backward pass"),
                N_("never: checkpoint keeps it"),
            ],
            answer=1,
            why=N_(
                "Checkpoint deletes A and B after the forward pass and "
                "reruns `abc` in the backward pass to get them back."
            ),
        ),
        Question(
            N_(
                "`checkpoint_sequential` cuts 12 layers into 3 segments. Which segment does the "
                "backward pass not recompute?"
            ),
            [
                N_("the first: its input is the step's input"),
                N_("the last: its activations are kept from the forward pass"),
                N_("none: every segment is recomputed once"),
            ],
            answer=1,
            why=N_(
                "The last segment is not checkpointed, so the backward pass starts on its kept "
                "activations; that is why the step costs x1.22, not x1.33, at k = 3."
            ),
        ),
        Question(
            N_(
                "A chain of 36 equal blocks, checkpointed with `checkpoint_sequential`. Which number of "
                "segments keeps the least activation memory?"
            ),
            ["6", "1", "36"],
            answer=0,
            why=N_(
                "Memory goes as n/k + k - 1, smallest at k = sqrt(36) = 6; k = 36 keeps every block's input, "
                "as much as no checkpointing."
            ),
        ),
        Question(
            N_(
                "You call `model.eval()` on a BERT with checkpointing enabled, then run forward and "
                "backward. What does checkpointing save?"
            ),
            [
                N_("the same as in `train()` mode"),
                N_("everything but the attention"),
                N_("nothing: Hugging Face models checkpoint only while training"),
            ],
            answer=2,
            why=N_("The layers check `self.training` before they checkpoint (section 4 measured it)."),
        ),
    ),
    "02": (
        Question(
            N_("When does `Trainer` turn gradient checkpointing on?"),
            [N_("when `Trainer(...)` is built"), N_("when `train()` starts"), N_("when `evaluate()` runs")],
            answer=1,
            why=N_(
                "Section 3 printed `False` once the trainer was built and `True` after `train()`: measure "
                "the model after training starts."
            ),
        ),
        Question(
            N_(
                "Same seed, same data: what does checkpointing "
                "change in the accuracy and F1 the model reaches?"
            ),
            [
                N_("it lowers them a little, as a price for the memory"),
                N_("nothing: the same operations run on the same inputs"),
                N_("it raises them, as a regularizer would"),
            ],
            answer=1,
            why=N_(
                "Checkpointing recomputes the same values it deleted, so the gradients and the metrics agree "
                "(section 4 measured both runs)."
            ),
        ),
        Question(
            N_("About how many FLOPs does one training step with checkpointing cost, against one without?"),
            [N_("the same"), "4/3", N_("twice")],
            answer=1,
            why=N_(
                "Forward 1, backward about 2, plus one more forward of the layers: (1 + 2 + 1) / (1 + 2)."
            ),
        ),
        Question(
            N_(
                "The slide's `TrainingArguments(..., evaluation_strategy=\"epoch\")` on today's transformers:"
            ),
            [
                N_("works as written"),
                N_("warns that the name is deprecated"),
                N_("raises a TypeError: the argument is now `eval_strategy`"),
            ],
            answer=2,
            why=N_(
                "`evaluation_strategy` was removed in transformers 4.51; "
                "`gradient_checkpointing=True` still works but warns."
            ),
        ),
    ),
    "03": (
        Question(
            N_(
                "Inside `accelerator.accumulate(model)` with 2 accumulation steps, what does "
                "`optimizer.step()` do on the first micro-batch?"
            ),
            [
                N_("it updates the weights with half the gradient"),
                N_("nothing: the prepared optimizer skips its step until the last micro-batch"),
                N_("it raises an error"),
            ],
            answer=1,
            why=N_(
                "The prepared optimizer steps only when the gradients are synchronized, on the last "
                "micro-batch; the scheduler follows it."
            ),
        ),
        Question(
            N_("With 2 accumulation steps, a linear schedule sized `len(dataloader) * epochs` ends where?"),
            [N_("at zero"), N_("at half the peak learning rate"), N_("at twice the peak")],
            answer=1,
            why=N_(
                "It counts micro-batches but steps once per optimizer "
                "step, so it gets half way: section 2 measured it."
            ),
        ),
        Question(
            N_(
                "Dropout on, same seed, same batch: the gradients "
                "with checkpointing, against those without, are"
            ),
            [
                N_("identical to the last bit"),
                N_("equal within float32 rounding"),
                N_("different: dropout draws new masks when the layer reruns"),
            ],
            answer=0,
            why=N_(
                "Checkpointing restores the random state before it "
                "recomputes, so dropout draws the same masks (section 3)."
            ),
        ),
        Question(
            N_(
                "Two micro-batches of 8, accumulated, against "
                "one batch of the same 16 rows: the gradients are"
            ),
            [N_("identical to the last bit"), N_("equal within float32 rounding"), N_("twice as large")],
            answer=1,
            why=N_(
                "The sums run in a different order (two products and an addition), and floating-point "
                "addition is not associative (section 4)."
            ),
        ),
    ),
    "04": (
        Question(
            N_("What does Local SGD average between the processes every K steps?"),
            [N_("the gradients"), N_("the model's parameters"), N_("the losses")],
            answer=1,
            why=N_(
                "Each process trains on its own for K calls of `local_sgd.step()`, "
                "then the processes average their parameters, one all-reduce per parameter tensor."
            ),
        ),
        Question(
            N_('Which process is the slide\'s "driver node" in data parallel training?'),
            [
                N_("rank 0, which collects the gradients and sends back the average"),
                N_("none: an all-reduce is symmetric, every process sends and receives"),
                N_("the fastest process"),
            ],
            answer=1,
            why=N_(
                "DDP all-reduces the gradients peer to peer, and LocalSGD the parameters: every process ends "
                "with the same average."
            ),
        ),
        Question(
            N_("`LocalSGD` in a run with one process:"),
            [
                N_("averages every K steps as usual"),
                N_("does nothing: there is no other copy to average with"),
                N_("raises an error"),
            ],
            answer=1,
            why=N_(
                "With one process the averaging is skipped; a launch that starts fewer processes than you "
                "meant trains without any."
            ),
        ),
        Question(
            N_("Raising K from 4 to 16 for the same number of steps:"),
            [
                N_("about a quarter of the synchronizations, and the copies drift further apart in between"),
                N_("4 times the synchronizations"),
                N_("the same loss whatever K, for free"),
            ],
            answer=0,
            why=N_(
                "Fewer averages mean less communication; the price is the "
                "drift between them, which can raise the loss: section 4 weighs it."
            ),
        ),
    ),
    "05": (
        Question(
            N_("What does DiLoCo all-reduce at the end of a round of H inner steps?"),
            [
                N_("the gradients of the last step"),
                N_("the pseudo-gradient: the global parameters minus each process's, averaged"),
                N_("the inner optimizer's moments"),
            ],
            answer=1,
            why=N_(
                "The change of the parameters over the round, averaged over the processes, is what the outer "
                "optimizer steps with; the inner optimizer's state stays in each process."
            ),
        ),
        Question(
            N_("DiLoCo with an outer SGD at learning rate 1 and no momentum is:"),
            [
                N_("Local SGD: the new global parameters are the processes' average"),
                N_("data parallel"),
                N_("no training at all: the outer step cancels the inner ones"),
            ],
            answer=0,
            why=N_(
                "θ − 1 · (θ − mean(θᵢ)) = mean(θᵢ): section 3 measured "
                "the two programs agreeing to float32's rounding."
            ),
        ),
        Question(
            N_("Why does DiLoCo with the paper's outer optimizer stall at H = 8 on this model?"),
            [
                N_("it sends too few bytes to learn"),
                N_(
                    "its outer step grows to several times the workers' averaged change: momentum keeps "
                    "pushing the way earlier rounds went"
                ),
                N_("the workers walk apart and their average cancels out"),
            ],
            answer=1,
            why=N_(
                "Section 4 measured the outer step against the averaged pseudo-gradient: several times it at "
                "H = 8, near it in the runs that learn. DiLoCo at H = 32 sends even fewer bytes and learns."
            ),
        ),
        Question(
            N_("Bucketing the pseudo-gradient into one flat buffer changes:"),
            [
                N_("the bytes sent per synchronization"),
                N_("the number of all-reduce calls per synchronization, from one per tensor to one"),
                N_("the number of synchronizations"),
            ],
            answer=1,
            why=N_(
                "The same bytes travel in one call instead of 25 here, which saves each call's fixed cost."
            ),
        ),
        Question(
            N_('"500 times less communication" at H = 500 compared with data parallel counts:'),
            [
                N_("synchronizations (and bytes) per training step"),
                N_("compute per training step"),
                N_("the loss reached"),
            ],
            answer=0,
            why=N_(
                "One synchronization every 500 steps instead of every step, each with a full model's bytes; "
                "every worker still computes every step."
            ),
        ),
    ),
    "06": (
        Question(
            N_("Which change leaves the activations a training step saves for backward as they are?"),
            [
                N_("checkpointing every layer"),
                N_("SDPA (fused) attention instead of eager"),
                N_("SGD instead of AdamW"),
                N_("bf16 mixed precision"),
            ],
            answer=2,
            why=N_(
                "The optimizer's state depends on the parameters only; the activations depend on the batch, "
                "the sequence, the attention, the precision and checkpointing (section 4's bars)."
            ),
        ),
        Question(
            N_(
                "With full checkpointing, what does a transformer "
                "layer keep between the forward and the backward pass?"
            ),
            [
                N_("nothing at all"),
                N_("its input: 2·s·b·h bytes in 16 bits"),
                N_("its matrix products' outputs"),
                N_("its a·s·s attention scores"),
            ],
            answer=1,
            why=N_(
                "Checkpoint keeps the layer's input and recomputes the rest in the backward pass: "
                "Korthikanti et al.'s s·b·h·(34 + 5·a·s/h) becomes 2·s·b·h."
            ),
        ),
        Question(
            N_("Why does the 5·a·s/h term of Korthikanti et al.'s formula matter at long sequences?"),
            [
                N_(
                    "it grows with s², the rest with s: for BERT-base "
                    "at s = 512 it is 40, more than the other 34"
                ),
                N_("it counts the optimizer's state, which grows with the sequence"),
                N_("it matters only at short sequences"),
            ],
            answer=0,
            why=N_(
                "The a score matrices of s × s per sequence (the softmax's output, its dropout mask) grow "
                "with the square of the sequence; fused attention (SDPA) keeps none of them."
            ),
        ),
        Question(
            N_("Gradient accumulation 4, at the same effective batch, trades:"),
            [
                N_(
                    "time for memory: four smaller forward and backward passes per step, a quarter of the "
                    "activations, the same update"
                ),
                N_("accuracy for memory: the update is that of a smaller batch"),
                N_("memory for time: fewer, larger steps"),
            ],
            answer=0,
            why=N_(
                "The micro-batches' gradients add up to the whole batch's (each "
                "loss scaled by 1/4); parameters, gradients and optimizer state "
                "stay as they are, the activations shrink four times."
            ),
        ),
    ),
    "07": (
        Question(
            N_(
                "apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block)) and "
                "checkpoint(block, x, use_reentrant=False) in forward, on every Block: what differs?"
            ),
            [
                N_("nothing measured: the same bytes kept, the same FLOPs, the same gradients"),
                N_("the wrapper keeps less, because it wraps from outside"),
                N_("the wrapper's gradients differ slightly"),
            ],
            answer=0,
            why=N_(
                "Both run each Block under the same non-reentrant checkpoint; the wrapper only changes "
                "where the call is written (and the parameters' names)."
            ),
        ),
        Question(
            N_("On a machine without a GPU, what does torch.autograd.graph.save_on_cpu() free?"),
            [
                N_("nothing: host and device memory are the same memory, so nothing moves"),
                N_("all the saved activations"),
                N_("the parameters' copies"),
            ],
            answer=0,
            why=N_(
                "It copies what autograd saves to the CPU; a tensor already there stays where it is. "
                "To free memory on a CPU the saved tensors must go somewhere else, such as a disk."
            ),
        ),
        Question(
            N_(
                "Every block is checkpointed and the saved bytes are small. What can still decide "
                "whether a training step fits?"
            ),
            [
                N_("the gradients, the optimizer's state and the block rebuilt in the backward pass"),
                N_("nothing: the saved bytes are the peak"),
                N_("only the parameters"),
            ],
            answer=0,
            why=N_(
                "The peak of a step adds what the saved bytes never show: the block recomputed during "
                "the backward pass, a gradient per parameter and, on the first step, AdamW's two moments."
            ),
        ),
    ),
}
