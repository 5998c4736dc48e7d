"""Will it fit? The memory one training step needs, predicted from a model's config (lesson 6).

`estimate(model, batch=..., seq=..., ...)` returns a breakdown with the formula of every line:
parameters, gradients and optimizer state (exact: counted from the model built on the meta
device, so no weights are read), the activations saved for backward (each tensor a layer of the
`transformers` implementation saves, counted by kind), and a stated allowance for what is not
modelled. `effitrain plan` prints the same from the command line.

The activation count follows Korthikanti et al. 2022 (arXiv:2205.05198), who count a
transformer layer's saved tensors as s*b*h*(34 + 5*a*s/h) bytes in 16 bits, but it counts what
these implementations save, which differs in three ways the lesson measures:
- dropout's mask is one byte per element on a GPU, but on a CPU it is a tensor of the
  activations' own type (4 bytes in fp32);
- the feed-forward width f is the config's (4h for BERT and GPT-2, 4h in the paper), and GPT-2's
  `gelu_new` is written out in Python, so it keeps three more s*b*f tensors than GELU;
- fused attention (SDPA's flash or memory-efficient kernels) keeps no a*s*s*b score matrices,
  only a log-sum-exp per row. On a CPU, SDPA with attention dropout falls back to the plain
  (math) path, which keeps them.

In 16 bits (`precision="bf16"` or `"fp16"`) the estimate follows `torch.autocast` (torch.amp): the
weights, gradients and AdamW state stay fp32 (4 + 4 + 8 bytes a parameter), autocast saves a 16-bit
copy of every Linear weight for backward (a line of its own), and the activations are those autocast
leaves, some 16-bit (each Linear's cast input), some fp32 (the residual stream, the norms, the loss):
the CPU's rules are measured (issue 47, within 1 % of saved-tensor hooks at real widths); CUDA's follow
PyTorch's documented op lists with the same code and are labelled predicted (`predicted`).
`master_weights=True` is the other scheme, ZeRO's (Rajbhandari et al. 2020): 16-bit weights and
gradients, an fp32 master copy and fp32 state (2 + 4 + 2 + 8). Megatron-LM counts 18 or 20 bytes, as it
also keeps fp32 gradients.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from effitrain_lessons.shared.arguments import whole_numbers
from effitrain_lessons.shared.i18n import N_, _, fill, format_number, phrase
from effitrain_lessons.shared.tables import ShowsAsTable, Table, format_bytes

CONFIG_DIR = Path(__file__).resolve().parents[1] / "course_data" / "configs"
MiB = 2**20
GiB = 2**30

# Memory as `nvidia-smi` reports it (MiB). Colab's free tier lends a T4.
GPUS = {
    "T4": 15360 * MiB,
    "colab-T4": 15360 * MiB,
    "L4": 23034 * MiB,
    "A100-40GB": 40960 * MiB,
    "A100-80GB": 81920 * MiB,
    "H100-80GB": 81559 * MiB,
}

# Compute capability of each preset's GPU. bf16 arithmetic needs Ampere (8.0) or newer: a T4 (Turing,
# 7.5) trains in 16 bits with fp16 autocast and a loss scaler (torch.amp.GradScaler) instead.
CAPABILITIES = {
    "T4": (7, 5),
    "colab-T4": (7, 5),
    "L4": (8, 9),
    "A100-40GB": (8, 0),
    "A100-80GB": (8, 0),
    "H100-80GB": (9, 0),
}
BF16_FROM = (8, 0)

PRECISIONS = ("fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "sgd-momentum")
ATTENTIONS = ("eager", "sdpa")
DEVICES = ("cuda", "cpu")
SHARDINGS = ("none", "zero1", "zero2", "zero3")  # as effitrain_lessons.shared.sharding measures them
SHARDING_NAMES = {"zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3"}
FAMILIES = ("bert", "gpt2", "llama")

# Not modelled, stated: the CUDA context and kernels (outside torch.cuda.max_memory_allocated), and a
# share of the modelled bytes for allocator fragmentation and temporary buffers of the backward pass.
CUDA_CONTEXT = GiB // 2
UNMODELLED_SHARE = 0.10


# ---------------------------------------------------------------------------------------------
# A model's shape, from its config


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs from a config; `parameters` and `tensors` are counted on the meta device."""

    name: str
    family: str  # "bert" (sequence classification) or "gpt2" / "llama" (causal language model)
    layers: int
    hidden: int  # h
    heads: int  # a
    kv_hidden: int  # width of the keys and values: h, or fewer with grouped-query attention
    intermediate: int  # f, the feed-forward width
    vocab: int  # V
    activation: str
    hidden_dropout: float
    attention_dropout: float
    parameters: int
    tensors: int  # parameter tensors (each gets its own optimizer step count)
    # Elements of the Linear (and GPT-2 Conv1D) weights, whose 16-bit copies autocast caches and saves
    # for backward: one layer's, and the rest (pooler and classifier, or the language-model head)
    layer_weights: int = 0
    head_weights: int = 0
    # (rows, elements) of every parameter tensor, in the model's order: how sharding cuts them
    sizes: tuple[tuple[int, int], ...] = field(default=(), repr=False)


def bundled_models() -> list[str]:
    """The model configs the package carries (no hub access needed)."""
    return sorted(path.stem for path in CONFIG_DIR.glob("*.json"))


def _read_config(model) -> tuple[str, dict]:
    """(name, config dict) for a bundled name, a folder with a config.json, a .json file or a config
    object."""
    if hasattr(model, "to_dict"):
        return getattr(model, "name_or_path", "") or model.model_type, model.to_dict()
    if isinstance(model, dict):
        return model.get("name", model.get("model_type", "model")), dict(model)
    text = str(model)
    bundled = {name.lower(): name for name in bundled_models()}
    if text.lower() in bundled:
        path = CONFIG_DIR / f"{bundled[text.lower()]}.json"
    else:
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise ValueError(
                phrase(
                    "There is no model {name!r} here: use one of "
                    "{known}, or give a folder that holds a config.json.",
                    name=text,
                    known=", ".join(bundled_models()),
                )
            )
    try:
        return (
            bundled.get(text.lower(), path.parent.name if path.name == "config.json" else path.stem),
            json.loads(path.read_text(encoding="utf-8")),
        )
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(
            phrase("{path} is not a readable JSON config ({error}).", path=path, error=error)
        ) from None


def model_shape(model) -> ModelShape:
    """The shape of `model`: a bundled name (`bundled_models()`), a config folder or file, or a config."""
    if isinstance(model, ModelShape):
        return model
    name, config = _read_config(model)
    return _shape_of(name, json.dumps(config, sort_keys=True, default=str))


def _config(settings: dict, attention: str | None = None):
    from transformers import AutoConfig

    settings = dict(settings)
    family = settings.pop("model_type", None)
    if family not in FAMILIES:
        raise ValueError(
            phrase(
                "The planner knows BERT, GPT-2 and Llama-style configs (model_type {known}), not {family!r}.",
                known=", ".join(FAMILIES),
                family=family,
            )
        )
    for key in ("name", "transformers_version", "_name_or_path", "architectures", "attn_implementation"):
        settings.pop(key, None)
    if attention:
        settings["attn_implementation"] = attention
    return AutoConfig.for_model(family, **settings)


def _builder(family: str):
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    return AutoModelForSequenceClassification if family == "bert" else AutoModelForCausalLM


def build(model, attention: str = "sdpa", seed: int = 0, **overrides):
    """A real model of `model`'s family (random weights, on the CPU, in train mode), with config
    fields overridden (e.g. `num_hidden_layers=2`): the shapes lesson 6 measures.

    BERT gets a sequence-classification head (as the course fine-tunes it), GPT-2 and Llama a
    language-model head, as the estimate assumes.
    """
    import torch

    _name, settings = _read_config(model)
    config = _config({**settings, **overrides}, attention)
    torch.manual_seed(seed)
    built = _builder(config.model_type).from_config(config)
    return built.train()


@lru_cache(maxsize=32)
def _shape_of(name: str, config_json: str) -> ModelShape:
    import torch

    config = _config(json.loads(config_json))
    family = config.model_type
    with torch.device("meta"):
        built = _builder(family).from_config(config)
    unique = {id(p): p for p in built.parameters()}  # tied weights (GPT-2's, Llama 3.2's) count once
    weights = _linear_weights(built)
    sizes = tuple((p.shape[0] if p.dim() else 1, p.numel()) for p in unique.values())
    if family == "gpt2":
        hidden, heads = config.n_embd, config.n_head
        return ModelShape(
            name,
            family,
            config.n_layer,
            hidden,
            heads,
            hidden,
            config.n_inner or 4 * hidden,
            config.vocab_size,
            config.activation_function,
            config.resid_pdrop,
            config.attn_pdrop,
            sum(p.numel() for p in unique.values()),
            len(unique),
            *weights,
            sizes,
        )
    if family == "bert":
        dropouts = (config.hidden_dropout_prob, config.attention_probs_dropout_prob)
        kv_hidden = config.hidden_size
    else:
        dropouts = (0.0, config.attention_dropout)
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        kv_hidden = config.num_key_value_heads * head_dim
    return ModelShape(
        name,
        family,
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
        kv_hidden,
        config.intermediate_size,
        config.vocab_size,
        config.hidden_act,
        *dropouts,
        sum(p.numel() for p in unique.values()),
        len(unique),
        *weights,
        sizes,
    )


def _linear_weights(built) -> tuple[int, int]:
    """(one layer's, the rest's) elements of the weights autocast casts to 16 bits: those of nn.Linear
    and of GPT-2's Conv1D (an addmm), each tensor once (a tied head is cast once)."""
    import torch

    seen, layer, head = set(), 0, 0
    for name, module in built.named_modules():
        weight = getattr(module, "weight", None)
        if not isinstance(weight, torch.Tensor) or id(weight) in seen:
            continue
        if isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D":
            seen.add(id(weight))
            if re.search(r"\.(layer|h|layers)\.0\.", f".{name}."):
                layer += weight.numel()
            elif not re.search(r"\.(layer|h|layers)\.[0-9]+\.", f".{name}."):
                head += weight.numel()
    return layer, head


# ---------------------------------------------------------------------------------------------
# Settings: written once, for the function and the command line


@dataclass(frozen=True)
class Settings:
    """One training setup. `batch` is the effective batch: `accumulation` micro-batches of
    batch / accumulation."""

    batch: int = field(default=8, metadata={"help": "sequences per optimizer step (the effective batch)"})
    seq: int = field(default=128, metadata={"help": "tokens per sequence"})
    accumulation: int = field(default=1, metadata={"help": "micro-batches per optimizer step"})
    precision: str = field(
        default="fp32", metadata={"help": "the weights' and activations' type", "choices": PRECISIONS}
    )
    master_weights: bool = field(
        default=False,
        metadata={
            "help": (
                "with bf16/fp16: ZeRO's scheme (16-bit weights and gradients, an fp32 master copy "
                "and fp32 optimizer state) instead of torch.autocast's (fp32 weights and gradients, 16-bit "
                "copies of the weights)"
            )
        },
    )
    optimizer: str = field(default="adamw", metadata={"help": "the optimizer", "choices": OPTIMIZERS})
    attention: str = field(
        default="sdpa",
        metadata={
            "help": "eager keeps the a*s*s score matrices; sdpa (fused) does not",
            "choices": ATTENTIONS,
        },
    )
    checkpointing: bool = field(default=False, metadata={"help": "recompute each layer in backward"})
    device: str = field(default="cuda", metadata={"help": "where it trains", "choices": DEVICES})
    gpus: int = field(
        default=1, metadata={"help": "GPUs training together, data parallel: each runs the batch set here"}
    )
    sharding: str = field(
        default="none",
        metadata={
            "help": (
                "with --gpus 2 or more: zero1 shards the optimizer state, zero2 also the gradients "
                "(FSDP2, reshard_after_forward=False), zero3 also the parameters (reshard_after_forward=True)"
            ),
            "choices": SHARDINGS,
        },
    )

    def __post_init__(self) -> None:
        whole_numbers(batch=self.batch, seq=self.seq, accumulation=self.accumulation, gpus=self.gpus)
        if self.batch % self.accumulation:
            raise ValueError(
                phrase(
                    "An effective batch of {batch} does not split into {accumulation} equal micro-batches: "
                    "choose an accumulation that divides the batch.",
                    batch=self.batch,
                    accumulation=self.accumulation,
                )
            )
        for name, allowed in (
            ("precision", PRECISIONS),
            ("optimizer", OPTIMIZERS),
            ("attention", ATTENTIONS),
            ("device", DEVICES),
            ("sharding", SHARDINGS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    phrase(
                        "{name} must be one of {allowed}, got {value!r}.",
                        name=name,
                        allowed=", ".join(allowed),
                        value=getattr(self, name),
                    )
                )

        if self.sharding != "none" and self.gpus < 2:
            # one GPU has no one to share with: refused rather than quietly planned as unsharded
            raise ValueError(
                phrase(
                    "{stage} shards across GPUs, and one GPU has nothing to share: give gpus 2 or more, "
                    "or sharding none.",
                    stage=SHARDING_NAMES[self.sharding],
                )
            )

    @property
    def micro_batch(self) -> int:
        """Sequences in one micro-batch of one GPU (each GPU runs its own)."""
        return self.batch // self.accumulation


def _settings(settings: Settings | None, options: dict) -> Settings:
    """`settings` (default: `Settings()`) with `options` changed; an unknown option gets one sentence."""
    from dataclasses import fields

    known = [f.name for f in fields(Settings)]
    unknown = [name for name in options if name not in known]
    if unknown:
        raise ValueError(
            phrase(
                "{name!r} is not a setting of the estimate: use {known}.",
                name=unknown[0],
                known=", ".join(known),
            )
        )
    return replace(settings or Settings(), **options)


# ---------------------------------------------------------------------------------------------
# Activations: the tensors a layer saves, by kind


@dataclass(frozen=True)
class Term:
    """`count` tensors of `elements` (a product of the shape's letters) at `nbytes` bytes an element."""

    count: int
    elements: str  # letters among s, b, h, f, a, V, k (k: the keys' and values' width)
    nbytes: int
    what: str  # English (N_), for the lesson's tables

    def size(self, dims: dict[str, int]) -> int:
        n = self.count * self.nbytes
        for letter in self.elements.replace("²", ""):
            n *= dims[letter]
        return n * (dims["s"] if "²" in self.elements else 1)

    def formula(self) -> str:
        return f"{self.count}·{self.elements}·{self.nbytes} B"


def _bytes(settings: Settings) -> dict[str, int]:
    """Bytes an element, by kind: activations, dropout masks, statistics kept in fp32 on a GPU."""
    act = 4 if settings.precision == "fp32" else 2
    on_gpu = settings.device == "cuda"
    return {"act": act, "mask": 1 if on_gpu else act, "stat": 4 if on_gpu else act}


def scores_kept(shape: ModelShape, settings: Settings) -> bool:
    """Whether attention keeps its a*s*s score matrices: eager always; SDPA on a CPU when attention
    dropout is on (the fused CPU kernel has no dropout, so SDPA takes the math path)."""
    return settings.attention == "eager" or (settings.device == "cpu" and shape.attention_dropout > 0)


def layer_terms(shape: ModelShape, settings: Settings) -> list[Term]:
    """The tensors one transformer layer saves for backward, as this family's implementation saves them."""
    if autocast(settings):
        return _autocast_layer_terms(shape, settings)
    size = _bytes(settings)
    act, mask, stat = size["act"], size["mask"], size["stat"]
    fused = not scores_kept(shape, settings)
    if shape.family == "llama":
        # q, k, v projections' input, q and the output, two RMSNorms (input and normalised), o_proj
        # and down_proj inputs; eager attention repeats the keys and values to h.
        terms = [
            Term(8, "sbh", act, N_("layer inputs, norms and projections")),
            Term(2, "sbk" if fused else "sbh", act, N_("keys and values")),
            Term(4, "sbf", act, N_("feed-forward (SwiGLU)")),
            Term(2, "sb", stat, N_("norm statistics")),
        ]
    else:
        mlp = 5 if shape.activation == "gelu_new" else 2  # gelu_new, in Python, keeps 3 more
        projections = 10 if (shape.family == "gpt2" and fused) else 8
        terms = [
            Term(projections, "sbh", act, N_("layer inputs, norms and projections")),
            Term(mlp, "sbf", act, N_("feed-forward")),
            Term(4, "sb", stat, N_("norm statistics")),
        ]
        if shape.hidden_dropout > 0:
            terms.append(Term(2, "sbh", mask, N_("dropout masks")))
    if fused:
        terms.append(Term(1, "asb", 4, N_("attention log-sum-exp")))
    else:
        terms.append(Term(1, "as²b", act, N_("attention scores")))
        if shape.attention_dropout > 0:
            terms += [
                Term(1, "as²b", mask, N_("attention dropout mask")),
                Term(1, "as²b", act, N_("attention after dropout")),
            ]
    return terms


def autocast(settings: Settings) -> bool:
    """Whether the step runs under `torch.autocast` (torch.amp): 16 bits without master weights. The
    weights stay fp32; autocast casts them, and each op's inputs, by the device's op lists."""
    return settings.precision != "fp32" and not settings.master_weights


def predicted(settings: Settings) -> bool:
    """Whether the 16-bit figures are predicted, not measured: autocast's CUDA rules come from
    PyTorch's documented op lists and no GPU has measured them yet; the CPU's are measured."""
    return autocast(settings) and settings.device == "cuda"


def _autocast_layer_terms(shape: ModelShape, settings: Settings) -> list[Term]:
    """What one layer saves under autocast (2 B: 16-bit, 4 B: fp32, 1 B: a CUDA dropout mask).

    The rules, the same code for both devices: every Linear casts its own input to 16 bits and saves
    that copy (so q, k and v each keep one); the residual stream, the norms and their statistics stay
    fp32; dropout keeps a mask of its input's type on a CPU, one byte on a GPU. On a CPU the fallback
    (math) path of SDPA computes attention in fp32 and softmax keeps its input's type; on CUDA softmax,
    `pow` (GPT-2's gelu_new) and the losses are on autocast's fp32 list, and SDPA is always fused."""
    cuda = settings.device == "cuda"
    low, full = 2, 4
    mask = 1 if cuda else low
    fused = not scores_kept(shape, settings)
    math_path = not fused and settings.attention == "sdpa"  # on a CPU, with attention dropout
    inputs = 1 if shape.family == "gpt2" else 3  # GPT-2's one c_attn, or q, k, v projections
    if shape.family == "llama":
        terms = [
            Term(4, "sbh", full, N_("fp32 residual stream and norms")),
            Term(2, "sb", full, N_("norm statistics")),
            Term(3 + 2, "sbh", low, N_("16-bit inputs of the projections")),
        ]
        if fused:
            terms += [
                Term(2, "sbh", low, N_("queries and attention output")),
                Term(2, "sbk", low, N_("keys and values")),
            ]
        else:
            terms += [Term(4, "sbh", low, N_("queries, keys, values and attention output"))]
        terms.append(Term(4, "sbf", low, N_("feed-forward (SwiGLU)")))
    else:
        terms = [
            Term(2, "sbh", full, N_("fp32 residual stream and norms")),
            Term(4, "sb", full, N_("norm statistics")),
            Term(inputs + 2, "sbh", low, N_("16-bit inputs of the projections")),
        ]
        if math_path:
            terms.append(Term(3, "sbh", full, N_("queries, keys and values (fp32 attention)")))
        elif fused:
            terms.append(
                Term(3 if shape.family == "gpt2" else 1, "sbh", low, N_("queries and attention output"))
            )
            terms.append(Term(2, "sbk", low, N_("keys and values")))
        else:
            # GPT-2 at micro-batch 1: the query is a view of c_attn's output and keeps all three thirds
            views = 2 if (shape.family == "gpt2" and settings.micro_batch == 1) else 0
            terms.append(Term(3 + views, "sbh", low, N_("queries, keys and values")))
        if shape.activation == "gelu_new" and cuda:
            terms += [
                Term(3, "sbf", low, N_("feed-forward")),
                Term(2, "sbf", full, N_("feed-forward in fp32 (pow)")),
            ]
        else:
            terms.append(Term(5 if shape.activation == "gelu_new" else 2, "sbf", low, N_("feed-forward")))
        if shape.hidden_dropout > 0:
            terms.append(Term(2, "sbh", mask, N_("dropout masks")))
    if fused:
        terms.append(Term(1, "asb", full, N_("attention log-sum-exp")))
        return terms
    if math_path:
        scores = [
            (full, N_("attention scores")),
            (full, N_("attention dropout mask")),
            (full, N_("attention after dropout")),
        ]
    else:
        # softmax: in fp32 on CUDA's list, and where the model upcasts (GPT-2's fp32 mask value, Llama)
        soft = full if (cuda or shape.family != "bert") else low
        scores = [(soft, N_("attention scores"))]
        if shape.attention_dropout > 0:
            scores.append((1 if cuda else low, N_("attention dropout mask")))
        if shape.attention_dropout > 0:
            scores.append((low, N_("attention after dropout")))
        elif soft == full:
            scores.append((low, N_("16-bit attention scores")))
    return terms + [Term(1, "as²b", nbytes, what) for nbytes, what in scores]


def _autocast_outside_terms(shape: ModelShape, settings: Settings) -> list[Term]:
    """What lies outside the layers under autocast: fp32 embeddings and final norm, 16-bit head inputs,
    the fp32 loss."""
    cuda = settings.device == "cuda"
    if shape.family == "llama":
        return [
            Term(2, "sbh", 4, N_("fp32 final norm")),
            Term(1, "sb", 4, N_("norm statistics")),
            Term(1, "sbh", 2, N_("16-bit head input")),
            Term(1, "sbV", 4, N_("loss (fp32 log-softmax)")),
        ]
    mask = 1 if cuda else 4  # the embeddings are fp32
    if shape.family == "gpt2":
        terms = [
            Term(1, "sbh", 4, N_("fp32 final norm")),
            Term(2, "sb", 4, N_("norm statistics")),
            Term(1, "sbh", 2, N_("16-bit head input")),
            Term(1, "sbV", 4, N_("loss (fp32 log-softmax)")),
        ]
    else:
        terms = [
            Term(1, "sbh", 4, N_("fp32 embeddings norm")),
            Term(2, "sb", 4, N_("norm statistics")),
            Term(3 if shape.hidden_dropout > 0 else 2, "bh", 2, N_("pooler and classifier")),
        ]
        if shape.hidden_dropout > 0:
            terms.append(Term(1, "bh", 1 if cuda else 2, N_("classifier dropout mask")))
    if shape.hidden_dropout > 0:
        terms.append(Term(1, "sbh", mask, N_("embedding dropout mask")))
    return terms


def weight_copies(shape: ModelShape, settings: Settings) -> dict[str, int]:
    """Bytes of the 16-bit weight copies autocast saves for backward: 'layer' (one layer's), 'kept'
    (what the forward leaves: every layer's and the head's; with checkpointing only the head's, the
    layers' are cast again when they are recomputed). 0 outside autocast."""
    if not autocast(settings):
        return {"layer": 0, "kept": 0}
    layer = 2 * shape.layer_weights
    head = 2 * shape.head_weights
    kept = head if settings.checkpointing else shape.layers * layer + head
    return {"layer": layer, "kept": kept}


def outside_terms(shape: ModelShape, settings: Settings) -> list[Term]:
    """What lies outside the layers: embeddings, the head, the loss."""
    if autocast(settings):
        return _autocast_outside_terms(shape, settings)
    size = _bytes(settings)
    act, mask = size["act"], size["mask"]
    if shape.family == "llama":
        return [
            Term(3, "sbh", act, N_("embeddings and final norm")),
            Term(1, "sbV", 4, N_("loss (fp32 log-softmax)")),
        ]
    terms = [Term(2, "sbh", act, N_("embeddings and final norm"))]
    if shape.hidden_dropout > 0:
        terms.append(Term(1, "sbh", mask, N_("embedding dropout mask")))
    if shape.family == "gpt2":
        terms.append(Term(1, "sbV", 4, N_("loss (fp32 log-softmax)")))
    else:
        terms.append(Term(1, "bh", act, N_("pooler")))
        if shape.hidden_dropout > 0:
            terms += [
                Term(1, "bh", mask, N_("classifier dropout mask")),
                Term(1, "bh", act, N_("classifier input")),
            ]
    return terms


def checkpointed_layer_terms(shape: ModelShape, settings: Settings) -> list[Term]:
    """With full recomputation a layer keeps only its input (fp32 under autocast: the residual stream)."""
    return [Term(1, "sbh", 4 if autocast(settings) else _bytes(settings)["act"], N_("layer input"))]


def checkpointed_outside_terms(shape: ModelShape, settings: Settings) -> list[Term]:
    """Checkpointed GPT-2 with eager attention also keeps the causal mask it hands to every layer."""
    terms = outside_terms(shape, settings)
    if shape.family == "gpt2" and settings.attention == "eager":
        terms.append(Term(1, "bs²", 4 if autocast(settings) else _bytes(settings)["act"], N_("causal mask")))
    return terms


def korthikanti_layer_bytes(s: int, b: int, h: int, a: int) -> int:
    """Korthikanti et al. 2022: one transformer layer's activations, 16-bit tensors and 1-byte
    dropout masks, s*b*h*(34 + 5*a*s/h) bytes (twice that is the fp32 reference)."""
    return round(s * b * h * (34 + 5 * a * s / h))


def korthikanti_checkpointed_layer_bytes(s: int, b: int, h: int) -> int:
    """With full recomputation a layer keeps only its input: 2*s*b*h bytes in 16 bits."""
    return 2 * s * b * h


def dimensions(shape: ModelShape, settings: Settings) -> dict[str, int]:
    """The letters a term's formula is written in (s, b, h, f, a, V, k), as numbers for `Term.size`."""
    return {
        "s": settings.seq,
        "b": settings.micro_batch,
        "h": shape.hidden,
        "f": shape.intermediate,
        "a": shape.heads,
        "V": shape.vocab,
        "k": shape.kv_hidden,
    }


def _total(terms: list[Term], dims: dict[str, int]) -> int:
    return sum(term.size(dims) for term in terms)


def _formula(terms: list[Term]) -> str:
    return " + ".join(term.formula() for term in terms)


# ---------------------------------------------------------------------------------------------
# The estimate


@dataclass(frozen=True)
class Line:
    """One line of the breakdown: what, how many bytes, and the formula that gave them."""

    name: str  # English (N_); shown translated
    nbytes: int
    formula: str
    modelled: bool = True  # False for the allowance


@dataclass(frozen=True, repr=False)  # a cell that ends with it shows its table, not its fields
class Estimate(ShowsAsTable):
    """The memory one training step needs, line by line. `total` includes the allowance."""

    model: ModelShape
    settings: Settings
    lines: tuple[Line, ...]

    @property
    def total(self) -> int:
        return sum(line.nbytes for line in self.lines)

    @property
    def modelled(self) -> int:
        """What the lines model (comparable with torch.cuda.max_memory_allocated)."""
        return sum(line.nbytes for line in self.lines if line.modelled)

    def line(self, name: str) -> Line:
        for line in self.lines:
            if line.name == name:
                return line
        raise KeyError(name)

    def bytes_of(self, name: str) -> int:
        """Bytes of the line `name`, 0 when the estimate has no such line."""
        return next((line.nbytes for line in self.lines if line.name == name), 0)

    def fits(self, memory) -> bool:
        return self.total <= memory_of(memory)

    def table(self) -> Table:
        rows = []
        for line in self.lines:
            rows.append((_(line.name), format_bytes(line.nbytes), line.formula))
            if line.name == "activations" and autocast(self.settings):
                # the activations by type: what autocast keeps in fp32 and what in 16 bits
                rows += [
                    ("  " + _(kind), format_bytes(n), "")
                    for kind, n in activations_by_type(self.model, self.settings).items()
                ]
        rows.append((_("total"), format_bytes(self.total), ""))
        return Table(["memory", "bytes", "formula"], rows, title=describe(self))

    def to_dict(self) -> dict:
        return {
            "model": {key: value for key, value in asdict(self.model).items() if key != "sizes"},
            "settings": asdict(self.settings),
            "lines": [asdict(line) for line in self.lines],
            "modelled_bytes": self.modelled,
            "total_bytes": self.total,
            "autocast": autocast(self.settings),
            "predicted": predicted(self.settings),
            "activations_by_type": activations_by_type(self.model, self.settings),
        }


def describe(estimate: Estimate) -> str:
    """One line naming the model and the setup."""
    s = estimate.settings
    precision = (
        s.precision
        if s.precision == "fp32"
        else (
            phrase("{precision} with fp32 master weights (ZeRO)", precision=s.precision)
            if s.master_weights
            else phrase("{precision} autocast (torch.amp)", precision=s.precision)
        )
    )
    described = phrase(
        "{model}: batch {batch} ({accumulation} x {micro}), sequence {seq}, {precision}, {optimizer}, "
        "{attention} attention, checkpointing {checkpointing}",
        model=estimate.model.name,
        batch=s.batch,
        accumulation=s.accumulation,
        micro=s.micro_batch,
        seq=s.seq,
        precision=precision,
        optimizer=s.optimizer,
        attention=s.attention,
        checkpointing=_("on") if s.checkpointing else _("off"),
    )
    if s.gpus > 1:
        described += ", " + phrase(
            "per GPU, {gpus} GPUs, {sharding}",
            gpus=s.gpus,
            sharding=SHARDING_NAMES.get(s.sharding) or _("data parallel"),
        )
    if predicted(s):
        described += " " + _(
            "(predicted: CUDA's autocast rules from PyTorch's op lists, not yet measured on a GPU)"
        )
    return described


def _fsdp_shard(shape: ModelShape, gpus: int) -> int:
    """Elements of the largest shard FSDP2 gives a GPU: each tensor cut on dim 0 into chunks of
    ceil(rows / gpus) rows (`torch.chunk`), the first GPU's always a whole chunk."""
    if not shape.sizes:
        return math.ceil(shape.parameters / gpus)
    return sum(math.ceil(rows / gpus) * (elements // rows) for rows, elements in shape.sizes)


def _zero1_partition(shape: ModelShape, gpus: int) -> list[tuple[int, int]]:
    """(elements, tensors) whose optimizer state each GPU keeps under ZeroRedundancyOptimizer: whole
    tensors, largest first, each to the GPU with the fewest elements so far (the first such)."""
    sizes = [elements for _rows, elements in shape.sizes] or [shape.parameters]
    held = [[0, 0] for _ in range(gpus)]
    for elements in sorted(sizes, reverse=True):
        rank = min(range(gpus), key=lambda r: held[r][0])
        held[rank][0] += elements
        held[rank][1] += 1
    return [(elements, tensors) for elements, tensors in held]


def held_per_gpu(shape: ModelShape, settings: Settings) -> dict[str, int]:
    """Elements the busiest GPU holds at the end of a step, as `effitrain_lessons.shared.sharding`
    measures them: 'parameters', 'gradients', 'state' (the parameters whose optimizer state, and master
    copy, it keeps) and 'tensors' (how many tensors those are)."""
    p, t, n = shape.parameters, shape.tensors, settings.gpus
    if settings.sharding == "none":
        return {"parameters": p, "gradients": p, "state": p, "tensors": t}
    if settings.sharding == "zero1":
        per_state = {"adamw": 8, "adamw-8bit": 2, "sgd-momentum": 4, "sgd": 0}[settings.optimizer]
        elements, tensors = max(
            _zero1_partition(shape, n), key=lambda held: per_state * held[0] + 4 * held[1]
        )
        return {"parameters": p, "gradients": p, "state": elements, "tensors": tensors}
    shard = _fsdp_shard(shape, n)
    # FSDP2 keeps every parameter's AdamW step count, a plain tensor, on every GPU
    return {"parameters": shard, "gradients": shard, "state": shard, "tensors": t}


def _state_lines(shape: ModelShape, settings: Settings) -> list[Line]:
    # torch.amp (autocast) keeps the weights, their gradients and the optimizer state in fp32 (its 16-bit
    # weight copies are a line of their own); ZeRO's scheme (master_weights) keeps 16-bit
    # weights and gradients, an fp32 master copy the optimizer updates, and fp32 state. Sharded, each
    # line is what the busiest GPU holds once the step is over (`held_per_gpu`); the master copy is
    # sharded with the optimizer state.
    held = held_per_gpu(shape, settings)
    p, g, o, t = held["parameters"], held["gradients"], held["state"], held["tensors"]
    master = settings.precision != "fp32" and settings.master_weights
    weight = 2 if master else 4
    state = 4
    lines = [Line(N_("parameters"), weight * p, f"{weight} B × {format_number(p, ',')}")]
    if master:
        lines.append(Line(N_("fp32 master weights"), 4 * o, f"4 B × {format_number(o, ',')}"))
    lines.append(Line(N_("gradients"), weight * g, f"{weight} B × {format_number(g, ',')}"))
    if settings.optimizer == "adamw":
        # two moments, and PyTorch's step count: one fp32 scalar tensor per parameter tensor
        lines.append(
            Line(
                N_("optimizer state"),
                2 * state * o + 4 * t,
                phrase(
                    "2 × {state} B × {parameters:,} + 4 B × {tensors} tensors",
                    state=state,
                    parameters=o,
                    tensors=t,
                ),
            )
        )
    elif settings.optimizer == "adamw-8bit":
        lines.append(
            Line(
                N_("optimizer state"), 2 * o, phrase("2 × 1 B × {parameters:,} (8-bit moments)", parameters=o)
            )
        )
    elif settings.optimizer == "sgd-momentum":
        lines.append(Line(N_("optimizer state"), state * o, f"{state} B × {format_number(o, ',')}"))
    else:
        lines.append(Line(N_("optimizer state"), 0, "0 (SGD)"))
    if settings.sharding == "zero2":
        # FSDP2 with reshard_after_forward=False keeps the whole parameters it gathered for forward
        # until backward is done, on top of its shards (ZeRO-2 keeps whole parameters)
        whole = shape.parameters
        lines.append(
            Line(
                N_("whole parameters, forward to backward"),
                weight * whole,
                f"{weight} B × {format_number(whole, ',')}",
            )
        )
    return lines


def activation_bytes(shape: ModelShape, settings: Settings) -> dict[str, int]:
    """Bytes saved for backward: 'layer' (one layer), 'kept' (what the forward leaves for backward)
    and 'recomputed' (one layer rebuilt during backward; 0 without checkpointing)."""
    dims = dimensions(shape, settings)
    layer = _total(layer_terms(shape, settings), dims)
    outside = _total(outside_terms(shape, settings), dims)
    if settings.checkpointing:
        outside = _total(checkpointed_outside_terms(shape, settings), dims)
        kept = shape.layers * _total(checkpointed_layer_terms(shape, settings), dims) + outside
        return {"layer": layer, "kept": kept, "recomputed": layer}
    return {"layer": layer, "kept": shape.layers * layer + outside, "recomputed": 0}


def activations_by_type(shape: ModelShape, settings: Settings) -> dict[str, int]:
    """The activations the forward leaves for backward, by bytes an element: {"fp32": ..., "16-bit":
    ..., "1-byte masks": ...} (the 16-bit weight copies are not among them)."""
    dims = dimensions(shape, settings)
    if settings.checkpointing:
        terms = shape.layers * checkpointed_layer_terms(shape, settings) + checkpointed_outside_terms(
            shape, settings
        )
    else:
        terms = shape.layers * layer_terms(shape, settings) + outside_terms(shape, settings)
    names = {4: N_("fp32"), 2: N_("16-bit"), 1: N_("1-byte masks")}
    split: dict[str, int] = {}
    for term in terms:
        split[names[term.nbytes]] = split.get(names[term.nbytes], 0) + term.size(dims)
    return split


def estimate(model, settings: Settings | None = None, **options) -> Estimate:
    """The memory one training step of `model` needs, line by line, each with its formula.

    `model`: a bundled name (`bundled_models()`), a config folder or file, or a config. `options`
    are `Settings` fields: batch (the effective batch), seq, accumulation, precision ("fp32",
    "bf16", "fp16"), master_weights, optimizer ("adamw", "adamw-8bit", "sgd", "sgd-momentum"),
    attention ("eager", "sdpa"), checkpointing, device ("cuda", "cpu"), gpus and sharding ("none",
    "zero1", "zero2", "zero3"). With gpus > 1 every line is per GPU: the activations those of the
    GPU's own micro-batch, the parameters, gradients and optimizer state the most one GPU holds once
    the step is over (`held_per_gpu`). Used by lesson 6 and `effitrain plan`.
    """
    settings = _settings(settings, options)
    shape = model_shape(model)
    lines = _state_lines(shape, settings)
    saved = activation_bytes(shape, settings)
    per_layer = _formula(
        checkpointed_layer_terms(shape, settings) if settings.checkpointing else layer_terms(shape, settings)
    )
    outside = (
        checkpointed_outside_terms(shape, settings)
        if settings.checkpointing
        else outside_terms(shape, settings)
    )
    lines.append(
        Line(N_("activations"), saved["kept"], f"{shape.layers} × ({per_layer}) + {_formula(outside)}")
    )
    copies = weight_copies(shape, settings)
    if autocast(settings):
        head = f"2 B × {format_number(shape.head_weights, ',')}"
        lines.append(
            Line(
                N_("16-bit weight copies"),
                copies["kept"],
                head
                if settings.checkpointing
                else f"{shape.layers} × 2 B × {format_number(shape.layer_weights, ',')} + {head}",
            )
        )
    if settings.checkpointing:
        recomputed = _formula(layer_terms(shape, settings))
        if copies["layer"]:
            recomputed += f" + 2 B × {format_number(shape.layer_weights, ',')}"
        lines.append(Line(N_("one layer recomputed"), saved["recomputed"] + copies["layer"], recomputed))
    modelled = sum(line.nbytes for line in lines)
    allowance = math.ceil(UNMODELLED_SHARE * modelled)
    formula = f"{format_number(UNMODELLED_SHARE, '.0%')} × {format_bytes(modelled)}"
    if settings.device == "cuda":
        allowance += CUDA_CONTEXT
        formula += f" + {format_bytes(CUDA_CONTEXT)}"
    lines.append(Line(N_("not modelled (allowance)"), allowance, formula, modelled=False))
    return Estimate(shape, settings, tuple(lines))


# ---------------------------------------------------------------------------------------------
# Memory, and what fits in it


def memory_of(memory) -> int:
    """Bytes of a GPU preset (`GPUS`: "T4", "A100-80GB", ...), a size such as "12GiB", "16GB" or
    "15360MiB", or a number of bytes."""
    if isinstance(memory, bool):
        raise ValueError(_("Give the memory as a GPU name (such as T4) or a size (such as 16GiB)."))
    if isinstance(memory, (int, float)):
        if not memory > 0 or memory == math.inf:
            raise ValueError(phrase("The memory must be more than 0 bytes, got {memory}.", memory=memory))
        return int(memory)
    text = str(memory).strip()
    presets = {name.lower(): size for name, size in GPUS.items()}
    if text.lower() in presets:
        return presets[text.lower()]
    found = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?", text, flags=re.IGNORECASE)
    if not found or float(found.group(1)) <= 0:
        raise ValueError(
            phrase(
                "{memory!r} is neither a GPU ({known}) nor a size such as 16GiB or 15360MiB.",
                memory=text,
                known=", ".join(GPUS),
            )
        )
    units = {
        "b": 1,
        "kb": 10**3,
        "mb": 10**6,
        "gb": 10**9,
        "tb": 10**12,
        "kib": 2**10,
        "mib": 2**20,
        "gib": 2**30,
        "tib": 2**40,
    }
    return int(float(found.group(1)) * units[(found.group(2) or "b").lower()])


def largest_micro_batch(model, memory, settings: Settings | None = None, **options) -> int:
    """The largest micro-batch (accumulation 1) that fits in `memory`; 0 when not even 1 does."""
    limit = memory_of(memory)
    settings = _settings(settings, options)

    def fits(b: int) -> bool:
        return estimate(model, settings, batch=b, accumulation=1).total <= limit

    if not fits(1):
        return 0
    high = 2
    while fits(high) and high < 2**24:
        high *= 2
    low = high // 2  # fits(low), not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def smallest_accumulation(model, memory, settings: Settings | None = None, **options) -> int | None:
    """The fewest micro-batches per step (a divisor of the batch) that make `batch` fit; None if none do."""
    limit = memory_of(memory)
    settings = _settings(settings, options)
    for k in range(1, settings.batch + 1):
        if settings.batch % k == 0 and estimate(model, settings, accumulation=k).total <= limit:
            return k
    return None


def fewest_gpus(
    model,
    gpu,
    stages: tuple[str, ...] = ("zero1", "zero2", "zero3"),
    most: int = 64,
    settings: Settings | None = None,
    **options,
) -> dict[str, int | None]:
    """For each sharding stage, the fewest GPUs of the kind `gpu` (a preset or a size), from 2 to
    `most`, on which the step fits on every one of them; None where even `most` do not. Sharding cuts
    the parameters, gradients and optimizer state, never a GPU's own activations."""
    limit = memory_of(gpu)
    settings = _settings(settings, options)
    fewest: dict[str, int | None] = {}
    for stage in stages:

        def fits(n: int, stage=stage) -> bool:
            return estimate(model, settings, gpus=n, sharding=stage).total <= limit

        # FSDP2's shards never grow with more GPUs, so `most` failing settles it; ZeRO-1 gives out whole
        # tensors, greedily, and is counted up from 2 whatever `most` says
        if stage != "zero1" and not fits(most):
            fewest[stage] = None
        else:
            fewest[stage] = next((n for n in range(2, most + 1) if fits(n)), None)
    return fewest


@dataclass(frozen=True)
class Verdict:
    """Whether a setup fits a GPU, and if not, which single change would make it fit."""

    gpu: str
    memory: int
    estimate: Estimate
    remedies: tuple[tuple[str, Estimate], ...]  # (English description, the estimate with that change)
    largest_micro_batch: int
    bf16: bool = True  # whether the GPU computes in bf16 (`supports_bf16`)
    sharded: tuple[tuple[str, int], ...] = ()  # (stage, fewest GPUs of this kind), where it does not fit

    @property
    def precision_note(self) -> str:
        """A sentence when the setup asks for bf16 on a GPU without it; else empty."""
        if self.estimate.settings.precision == "bf16" and not self.bf16:
            return phrase(
                "{gpu} has no bf16: train in fp16 with a loss scaler (GradScaler), the same bytes.",
                gpu=self.gpu,
            )
        return ""

    @property
    def fits(self) -> bool:
        return self.estimate.total <= self.memory

    def sentence(self) -> str:
        said = [self._fit_sentence(), self.sharding_sentence(), self.precision_note]
        return " ".join(part for part in said if part)

    def sharding_sentence(self) -> str:
        """Where the setup does not fit: how many GPUs of this kind fit it at each sharding stage;
        else empty."""
        if self.fits or not self.sharded:
            return ""
        return phrase(
            "Or shard it across {gpu} GPUs: it fits on {stages}.",
            gpu=self.gpu,
            stages=", ".join(
                phrase("{gpus} with {stage}", gpus=n, stage=SHARDING_NAMES[stage])
                for stage, n in self.sharded
            ),
        )

    def _fit_sentence(self) -> str:
        used = phrase(
            "{total} of {memory}", total=format_bytes(self.estimate.total), memory=format_bytes(self.memory)
        )
        if self.fits:
            return phrase(
                "{gpu}: fits ({used}); the largest micro-batch that fits is {largest}.",
                gpu=self.gpu,
                used=used,
                largest=self.largest_micro_batch,
            )
        if self.remedies:
            return phrase(
                "{gpu}: does not fit ({used}). Any one of these changes alone would make it fit: {remedies}.",
                gpu=self.gpu,
                used=used,
                remedies="; ".join(fill(_(text), values(remedy)) for text, remedy in self.remedies),
            )
        return phrase(
            "{gpu}: does not fit ({used}), and no single change the planner knows makes it fit.",
            gpu=self.gpu,
            used=used,
        )

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu,
            "memory_bytes": self.memory,
            "fits": self.fits,
            "mixed_precision": "bf16" if self.bf16 else "fp16",
            "total_bytes": self.estimate.total,
            "largest_micro_batch": self.largest_micro_batch,
            "fewest_gpus": dict(self.sharded),
            "remedies": [
                {
                    "change": _(text).format(**values(remedy)),
                    "settings": asdict(remedy.settings),
                    "total_bytes": remedy.total,
                }
                for text, remedy in self.remedies
            ],
        }


def values(estimate: Estimate) -> dict:
    return {"accumulation": estimate.settings.accumulation, "micro": estimate.settings.micro_batch}


def supports_bf16(gpu) -> bool:
    """Whether `gpu` computes in bf16: a preset of `GPUS` (by its compute capability, `CAPABILITIES`),
    a compute capability such as (7, 5), or a name such as "Tesla T4" or "NVIDIA A100-SXM4-80GB" (as
    `torch.cuda.get_device_name` says it). A bare size (such as "16GiB") names no GPU: False, since
    fp16 with a loss scaler runs on every CUDA GPU."""
    if isinstance(gpu, tuple):
        return tuple(gpu) >= BF16_FROM
    text = str(gpu).lower()
    presets = {name.lower(): capability for name, capability in CAPABILITIES.items()}
    if text in presets:
        return presets[text] >= BF16_FROM
    for name, capability in sorted(CAPABILITIES.items(), key=lambda item: -len(item[0])):
        if re.search(rf"\b{re.escape(name.split('-')[0].lower())}\b", text):
            return capability >= BF16_FROM
    return False


def mixed_precision(gpu) -> str:
    """The 16-bit type a training step on `gpu` should use: "bf16" where the GPU has it (Ampere and
    newer), else "fp16", with a loss scaler (`torch.amp.GradScaler`) to keep small gradients from
    underflowing. The bytes are the same; only the type changes."""
    return "bf16" if supports_bf16(gpu) else "fp16"


# The changes the verdict tries, one at a time (English; shown translated). The mixed precision's type
# follows the GPU (`mixed_precision`): see `remedies_for`.
REMEDIES = (
    (N_("checkpointing"), {"checkpointing": True}),
    (N_("fused (SDPA) attention"), {"attention": "sdpa"}),
    (N_("bf16 mixed precision"), {"precision": "bf16", "master_weights": False}),
    (N_("an 8-bit AdamW"), {"optimizer": "adamw-8bit"}),
    (N_("SGD without momentum"), {"optimizer": "sgd"}),
)
FP16_REMEDY = (
    N_("fp16 mixed precision with a loss scaler (GradScaler)"),
    {"precision": "fp16", "master_weights": False},
)


def remedies_for(gpu) -> tuple[tuple[str, dict], ...]:
    """`REMEDIES` as they apply on `gpu`: on a GPU without bf16 (a T4), fp16 with a loss scaler
    replaces bf16 mixed precision."""
    if supports_bf16(gpu):
        return REMEDIES
    return tuple(
        FP16_REMEDY if change.get("precision") == "bf16" else (text, change) for text, change in REMEDIES
    )


def verdict(model, gpu, settings: Settings | None = None, **options) -> Verdict:
    """Does `settings` fit `gpu` (a preset or a size)? If not, the single changes that would make it fit:
    each lever of `remedies_for(gpu)` (16-bit mixed precision in the type the GPU has), and the smallest
    gradient accumulation; and the fewest GPUs of this kind that fit it at each sharding stage
    (`fewest_gpus`). A setup in bf16 on a GPU without it gets a note (`Verdict.precision_note`)."""
    settings = _settings(settings, options)
    memory = memory_of(gpu)
    base = estimate(model, settings)
    remedies = []
    if base.total > memory:
        for text, change in remedies_for(gpu):
            if any(getattr(settings, key) != value for key, value in change.items()):
                changed = estimate(model, settings, **change)
                if changed.total <= memory:
                    remedies.append((text, changed))
        k = smallest_accumulation(model, memory, settings)
        if k is not None:
            remedies.append(
                (
                    N_("accumulation {accumulation} (micro-batches of {micro})"),
                    estimate(model, settings, accumulation=k),
                )
            )
    sharded = ()
    if base.total > memory:
        sharded = tuple((stage, n) for stage, n in fewest_gpus(model, gpu, settings=settings).items() if n)
    presets = {preset.lower(): preset for preset in GPUS}
    name = presets.get(str(gpu).lower(), gpu if isinstance(gpu, str) else format_bytes(memory))
    return Verdict(
        name,
        memory,
        base,
        tuple(remedies),
        largest_micro_batch(model, memory, settings),
        supports_bf16(gpu),
        sharded,
    )
