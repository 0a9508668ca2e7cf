"""The models of bench/engine_vs_torch.py: configurations, the PyTorch modules
(transformers' GPT-2 small, BERT-base and ViT-B/16 from their configurations,
random weights from a fixed seed), their seeded inputs, the ONNX export that
brings the same weights to coolbench, and the work a configuration does
(FLOPs, weight bytes, the bytes it must move at the least).

Nothing here touches a GPU by itself: the caller passes the device. torch and
transformers are imported inside the functions that need them, so the
parent process (which only starts children and prints tables) never loads
them, and numpy only where arrays are made (`--from` needs neither).
"""
import dataclasses
import os
import sys
import types

SEED = 1234
OPSET = 18
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}
MODELS = ("gpt2", "bert", "vit")

# Full size: transformers' defaults (GPT2Config() is GPT-2 small, BertConfig()
# BERT-base, ViTConfig() ViT-B/16 at 224x224), ViT with ImageNet's 1000 classes
# (its image and patch sizes written out: parse_config reads them).
# Tiny: the same structure at widths that run in a second on a CPU (--cpu-smoke).
SIZES = {
    "full": {"gpt2": {}, "bert": {}, "vit": {"num_labels": 1000, "image_size": 224,
                                             "patch_size": 16}},
    "tiny": {
        # As many positions as the full models, so that every configuration of the grid runs.
        "gpt2": dict(n_layer=2, n_embd=32, n_head=4, vocab_size=97, n_positions=1024,
                     bos_token_id=0, eos_token_id=0),
        "bert": dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=512),
        "vit": dict(image_size=32, patch_size=16, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=64, num_labels=10),
    },
}


@dataclasses.dataclass(frozen=True)
class Config:
    """One configuration: MODEL:DTYPE:BATCH[:SEQ[+PAST]].

    seq is the tokens per sequence of this call (ViT: the patches and the class
    token, set by the image size); past the cached tokens before them (GPT-2
    decode: seq 1 with a 128-token past is gpt2:fp16:1:1+128)."""
    model: str
    dtype: str
    batch: int
    seq: int
    past: int = 0

    @property
    def key(self):
        return f"{self.model}:{self.dtype}:{self.batch}:{self.seq}" + (
            f"+{self.past}" if self.past else "")

    @property
    def family(self):
        """What one ONNX export serves (batch and sequences are symbolic)."""
        return f"{self.model}-{self.dtype}-{'past' if self.past else 'nopast'}"


def parse_config(text, size="full"):
    parts = text.split(":")
    if len(parts) not in (3, 4) or parts[0] not in MODELS or parts[1] not in DTYPES:
        raise ValueError(f"configuration {text!r}: expected MODEL:DTYPE:BATCH[:SEQ[+PAST]] with "
                         f"MODEL one of {', '.join(MODELS)} and DTYPE one of {', '.join(DTYPES)} "
                         "(e.g. gpt2:fp16:1:128, gpt2:fp16:8:1+128, vit:fp16:32)")
    model, dtype = parts[0], parts[1]
    try:
        batch = int(parts[2])
        seq_text, _, past_text = (parts[3] if len(parts) == 4 else "").partition("+")
        seq = int(seq_text) if seq_text else None
        past = int(past_text) if past_text else 0
    except ValueError:
        raise ValueError(f"configuration {text!r}: BATCH, SEQ and PAST are integers") from None
    if model == "vit":
        vit = SIZES[size]["vit"]  # its image and patch sizes, without importing transformers
        tokens = (vit["image_size"] // vit["patch_size"]) ** 2 + 1
        if seq not in (None, tokens) or past:
            raise ValueError(f"configuration {text!r}: ViT's sequence is fixed by its image "
                             f"({tokens} tokens) and it has no past; write vit:{dtype}:{batch}")
        seq = tokens
    if seq is None:
        raise ValueError(f"configuration {text!r}: {model} needs SEQ (e.g. {model}:{dtype}:1:128)")
    if past and model != "gpt2":
        raise ValueError(f"configuration {text!r}: only GPT-2 takes a past (decode)")
    if batch < 1 or seq < 1 or past < 0:
        raise ValueError(f"configuration {text!r}: batch and seq must be at least 1")
    positions = {"gpt2": "n_positions", "bert": "max_position_embeddings"}.get(model)
    if positions and seq + past > getattr(dims(model, size), positions):
        raise ValueError(f"configuration {text!r}: {seq + past} positions, but {model} at size "
                         f"{size} has {getattr(dims(model, size), positions)}")
    return Config(model, dtype, batch, seq, past)


# transformers' defaults of the sizes the inputs, the ONNX names and work() read, written
# out so that neither a coolbench process nor the parent imports transformers (which imports
# torch) for them: 2 s of a coolbench process's build_s on a CPU (of 2), more on the GPU
# machine. dims() is them under SIZES; build_module checks them against the configuration it
# builds the model from (check_dims), and so does a test.
DEFAULTS = {
    "gpt2": dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024),
    "bert": dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                 num_attention_heads=12, intermediate_size=3072, max_position_embeddings=512,
                 type_vocab_size=2),
    "vit": dict(image_size=224, patch_size=16, num_channels=3, hidden_size=768,
                num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                num_labels=2),
}


def dims(model, size):
    """The sizes of MODEL at SIZE that the bench reads, as attributes (cfg.n_layer), without
    importing transformers."""
    return types.SimpleNamespace(**{**DEFAULTS[model], **SIZES[size][model]})


def check_dims(model, size, cfg):
    """Raises where transformers' configuration `cfg` disagrees with dims(): DEFAULTS is
    out of date for this transformers."""
    wrong = {k: (v, getattr(cfg, k, None)) for k, v in vars(dims(model, size)).items()
             if getattr(cfg, k, None) != v}
    if wrong:
        raise ValueError(f"{model} at size {size}: DEFAULTS (table, transformers) differ: "
                         f"{wrong}")


def gpt2_config(size):
    import transformers
    return transformers.GPT2Config(**SIZES[size]["gpt2"])


def bert_config(size):
    import transformers
    return transformers.BertConfig(**SIZES[size]["bert"])


def vit_config(size):
    import transformers
    return transformers.ViTConfig(**SIZES[size]["vit"])


def _tools():
    """tools/ on sys.path: the export helpers and wrappers live there."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tools")
    if here not in sys.path:
        sys.path.insert(0, os.path.normpath(here))


def _gpt2_with_past_class():
    import torch
    import transformers
    _tools()
    from torch_wrappers import cache_layer

    class GPT2WithPast(torch.nn.Module):
        """input_ids and every layer's past key and value in; logits and every
        layer's present key and value out, all plain tensors (transformers 5's
        model takes and returns a cache object, which the exporter cannot)."""

        def __init__(self, model):
            super().__init__()
            self.model = model
            self.layers = model.config.n_layer

        def forward(self, input_ids, *past):
            cache = transformers.DynamicCache()
            for layer in range(self.layers):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True)
            presents = []
            for layer in range(self.layers):
                presents += list(cache_layer(out.past_key_values, layer))
            return (out.logits, *presents)

    return GPT2WithPast


def transformers_model(model, size):
    """(transformers' class, its configuration) of MODEL at SIZE."""
    import transformers
    if model == "gpt2":
        return transformers.GPT2LMHeadModel, gpt2_config(size)
    if model == "bert":
        return transformers.BertModel, bert_config(size)
    return transformers.ViTForImageClassification, vit_config(size)


def preload(config, size):
    """The modules build_module imports for CONFIG, loaded ahead (a held measuring process:
    vs_torch_child.preload); touches no GPU."""
    import torch  # noqa: F401
    _tools()
    import torch_wrappers  # noqa: F401
    transformers_model(config.model, size)[0]  # transformers loads the class's module here
    if config.model == "gpt2" and config.past:
        _gpt2_with_past_class()


def seeded_model(model, size):
    """transformers' MODEL at SIZE in float32 on the CPU, its weights drawn by its own
    initialisation from SEED: the weights every process and the ONNX export hold."""
    import torch
    cls, cfg = transformers_model(model, size)
    torch.manual_seed(SEED)
    return cls(cfg)


def build_module(config, size, device, weights=None, info=None):
    """The wrapped model in .eval() on `device` in the configuration's dtype:
    a module whose forward takes the input tensors positionally and returns
    plain tensors. Random weights from SEED, made in float32 on the CPU and
    then cast, so every process and the ONNX export hold the same values.

    weights: the path of the model's weights file (weights_path; the prepare
    process writes it): where it is there and of this recipe, the model takes
    the file's tensors, bit for bit the drawn ones (save_weights checks that as
    it writes the file), instead of drawing them again; else they are drawn.
    info: a dict that gets `build_parts_s`, the seconds of `imports`
    (transformers' model code), `model` (made and its weights) and `to_device`
    (the cast and copy), and `weights`, where they came from."""
    import time
    marks = [time.perf_counter()]
    import torch
    _tools()
    import torch_wrappers  # not export_models: it imports onnx, which no measure needs

    transformers_model(config.model, size)  # transformers loads a model's code when asked
    marks.append(time.perf_counter())
    model, why = (load_weights(config.model, size, weights) if weights
                  else (None, "no weights file asked for"))
    if model is None:
        model = seeded_model(config.model, size)
    if config.model == "gpt2":
        module = (_gpt2_with_past_class()(model) if config.past
                  else torch_wrappers.LogitsOnly(model))
    elif config.model == "bert":
        module = torch_wrappers.BertOutputs(model)
    else:
        module = torch_wrappers.Logits(model)
    check_dims(config.model, size, model.config)
    marks.append(time.perf_counter())
    dtype = getattr(torch, DTYPES[config.dtype])
    module = module.eval().to(device=device, dtype=dtype)
    marks.append(time.perf_counter())
    if info is not None:
        info["build_parts_s"] = dict(zip(("imports", "model", "to_device"),
                                         (b - a for a, b in zip(marks, marks[1:]))))
        info["weights"] = "file" if why is None else f"drawn ({why})"
    return module


def input_names(config, size):
    if config.model == "gpt2":
        names = ["input_ids"]
        for layer in range(dims("gpt2", size).n_layer if config.past else 0):
            names += [f"past_key_{layer}", f"past_value_{layer}"]
        return names
    if config.model == "bert":
        return ["input_ids", "attention_mask", "token_type_ids"]
    return ["pixel_values"]


def output_names(config, size):
    if config.model == "gpt2":
        names = ["logits"]
        for layer in range(dims("gpt2", size).n_layer if config.past else 0):
            names += [f"present_key_{layer}", f"present_value_{layer}"]
        return names
    if config.model == "bert":
        return ["last_hidden_state", "pooler_output"]
    return ["logits"]


def make_inputs(config, size):
    """The configuration's inputs as numpy arrays, in input_names' order, from
    a seed of their own: every engine's process draws the same ones. Floats
    are float32 here (numpy has no bfloat16); to_torch casts them."""
    import numpy as np
    rng = np.random.default_rng([SEED, config.batch, config.seq, config.past])
    b, s = config.batch, config.seq
    if config.model == "gpt2":
        cfg = dims("gpt2", size)
        arrays = [rng.integers(0, cfg.vocab_size, (b, s), dtype=np.int64)]
        head = cfg.n_embd // cfg.n_head
        for _ in range(2 * cfg.n_layer if config.past else 0):
            arrays.append(rng.standard_normal((b, cfg.n_head, config.past, head), np.float32))
        return arrays
    if config.model == "bert":
        cfg = dims("bert", size)
        ids = rng.integers(0, cfg.vocab_size, (b, s), dtype=np.int64)
        return [ids, np.ones_like(ids), np.zeros_like(ids)]
    cfg = dims("vit", size)
    return [rng.standard_normal((b, cfg.num_channels, cfg.image_size, cfg.image_size),
                                np.float32)]


def to_torch(arrays, config, device):
    import numpy as np
    import torch
    dtype = getattr(torch, DTYPES[config.dtype])
    return [torch.from_numpy(a).to(device=device, dtype=dtype if a.dtype == np.float32 else None)
            for a in arrays]


def to_feeds(arrays, config, size):
    """The inputs as coolbench.Session feeds: float16 arrays for fp16 models;
    bfloat16 inputs go in as float32 (the session rounds them to nearest even,
    as torch's cast does)."""
    import numpy as np
    feeds = {}
    for name, a in zip(input_names(config, size), arrays):
        if a.dtype == np.float32 and config.dtype == "fp16":
            a = a.astype(np.float16)
        feeds[name] = a
    return feeds


def dynamic_axes(config, size):
    """export_models.export's form: per input, {axis: (symbol, min, max)}."""
    if config.model == "gpt2":
        axes = [{0: ("batch", 1, 512), 1: ("sequence", 1, 1023)}]
        past = {0: ("batch", 1, 512), 2: ("past_sequence", 1, 1023)}
        return axes + [past] * (len(input_names(config, size)) - 1)
    if config.model == "bert":
        return [{0: ("batch", 1, 512), 1: ("sequence", 2, 512)}] * 3
    return [{0: ("batch", 1, 512)}]


def onnx_dims(config):
    """coolbench.Session's dims for the export's symbolic dimensions."""
    dims = {"batch": config.batch}
    if config.model != "vit":
        dims["sequence"] = config.seq
    if config.past:
        dims["past_sequence"] = config.past
    return dims


def trace_config(config):
    """The shape an export is traced at: one of its own (batch 2, not 1; a
    short sequence), so that no size of the measured configurations is taken
    for a constant."""
    if config.model == "vit":
        return dataclasses.replace(config, batch=2)
    return Config(config.model, config.dtype, 2, 4 if config.past else 16, 16 if config.past else 0)


def export_onnx(config, size, device, path, weights=None):
    """Exports the configuration's family (batch and sequences symbolic) with
    the dynamo exporter at OPSET to `path`, from the model in its dtype on
    `device` (its weights from the file at `weights`, as build_module's);
    returns the seconds it took. The file is written next to `path` and
    renamed, so a cut-off export leaves no half file behind.

    Not the TorchScript exporter: for GPT-2 in float16 (transformers 5.17,
    torch 2.11) it casts the position embeddings to float32, so the residual
    stream and 48 of the 49 products' weights become float32, while PyTorch
    itself computes all of it in float16 (checked with forward hooks on the
    lent GPU, 2026-12-05): that graph is not the computation the PyTorch
    engines time. The dynamo export keeps every product's weight in float16
    and has one Cast (to bool)."""
    import time
    import torch
    _tools()
    import export_models

    started = time.perf_counter()
    shape = trace_config(config)
    module = build_module(config, size, device, weights)
    args = tuple(to_torch(make_inputs(shape, size), shape, device))
    partial = path + ".partial"
    with torch.no_grad():
        # GPT2WithPast.forward(input_ids, *past): the past's shapes as one nested tuple.
        export_models.export(module, args, partial, "dynamo", OPSET,
                             input_names(config, size), output_names(config, size),
                             dynamic_axes(config, size),
                             varargs_from=1 if config.past else None)
    os.replace(partial, path)
    return time.perf_counter() - started


def reference_slice(outputs, config):
    """What the processes compare across engines: the first output's last
    position (GPT-2: each sequence's next-token logits; BERT: the last token's
    hidden state) or ViT's logits, as float32 numpy."""
    import numpy as np
    first = np.asarray(outputs[0], dtype=np.float32)
    return first if config.model == "vit" else first[:, -1, :]


# ---- The weights, drawn once -----------------------------------------------------------------
#
# Drawing a model's weights is most of its build: transformers' initialisation runs over every
# weight twice (torch.nn's in each layer, then its own), 1.5 s of GPT-2's 5 s build on a CPU of
# 2 cores. The prepare process draws each model once and writes its float32 tensors into the
# work folder; the other processes make the model on the meta device (its initialisation then
# touches no memory) and give it the file's tensors, mapped from the file (the cast to the
# device reads them). The engines, the dtypes, the casts and the inputs are as before.

WEIGHTS_FORMAT = 1


def weights_path(folder, model, size):
    """Where MODEL's weights at SIZE are kept: one file serves every dtype and family."""
    return os.path.join(folder, "weights", f"{model}-{size}.pt")


def weights_recipe(model, size):
    """What the weights were drawn by: a file of another recipe (seed, sizes, torch's or
    transformers' version) is not used."""
    import torch
    import transformers
    return {"format": WEIGHTS_FORMAT, "model": model, "size": size, "seed": SEED,
            "sizes": SIZES[size][model], "torch": str(torch.__version__),
            "transformers": str(transformers.__version__)}


def _slots(model):
    """{first name: (tensor, whether a parameter, every name it has)} of the model's
    parameters and buffers (non-persistent ones too, which state_dict leaves out); a tied
    tensor (GPT-2's embedding and head) has several names."""
    slots, first = {}, {}
    for is_parameter, named in ((True, model.named_parameters(remove_duplicate=False)),
                                (False, model.named_buffers(remove_duplicate=False))):
        for name, tensor in named:
            key = first.setdefault(id(tensor), name)
            slots.setdefault(key, (tensor, is_parameter, []))[2].append(name)
    return slots


def _read_weights(path, model, size):
    """The weights file's contents, or None where it is missing or of another recipe."""
    import torch
    try:
        state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception:  # missing, cut short or not such a file: drawn as before
        return None
    ok = isinstance(state, dict) and state.get("recipe") == weights_recipe(model, size)
    return state if ok else None


def load_weights(model, size, path):
    """(MODEL at SIZE holding the tensors of the weights file at `path`, None), or (None,
    why not). The model is made on the meta device, so its initialisation draws nothing;
    each of its parameters and buffers is then the file's tensor, one object where the
    drawn model has one under several names, and the generator is left where the draw left
    it."""
    import torch
    state = _read_weights(path, model, size)
    if state is None:
        return None, "no weights file of this recipe"
    cls, cfg = transformers_model(model, size)
    torch.manual_seed(SEED)  # as seeded_model: the CUDA generators too
    try:
        with torch.device("meta"):
            built = cls(cfg)
    except Exception as e:  # a transformers that cannot: drawn as before
        return None, f"not made on the meta device: {type(e).__name__}: {e}"[:300]
    tensors = state["tensors"]
    slots = _slots(built)
    if list(slots) != list(tensors):
        return None, f"the weights file names other tensors ({len(tensors)}, {len(slots)} here)"
    for key, (meta, is_parameter, names) in slots.items():
        value = tensors[key]
        if value.shape != meta.shape or value.dtype != meta.dtype:
            return None, f"{key} in the weights file is {value.dtype} {tuple(value.shape)}"
        if is_parameter:
            value = torch.nn.Parameter(value, requires_grad=meta.requires_grad)
        for name in names:
            owner, _, leaf = name.rpartition(".")
            holder = built.get_submodule(owner)
            (holder._parameters if is_parameter else holder._buffers)[leaf] = value
    left = [name for name, (t, _, _) in _slots(built).items() if t.is_meta]
    left += [f"{type(m).__name__}.{k}" for m in built.modules() for k, v in vars(m).items()
             if isinstance(v, torch.Tensor) and v.is_meta]
    if left:
        return None, f"left on the meta device: {', '.join(left[:3])}"
    torch.set_rng_state(state["rng"])
    return built, None


def _bits(tensor):
    """The tensor's bits, to compare exactly (NaN's and -0's too)."""
    import torch
    if not tensor.is_floating_point():
        return tensor
    as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.detach().contiguous().view(as_int)


def weights_differ(a, b):
    """How two models' tensors differ (names, ties, parameter or buffer, dtype, shape,
    strides, requires_grad, bits), or None where they are the same."""
    import torch
    slots_a, slots_b = _slots(a), _slots(b)
    if list(slots_a) != list(slots_b):
        return f"names: {sorted(set(slots_a) ^ set(slots_b))[:3]} in one only"
    for key, (ta, pa, na) in slots_a.items():
        tb, pb, nb = slots_b[key]
        if (pa, na) != (pb, nb):
            return f"{key}: {'parameter' if pa else 'buffer'} named {na} against {nb}"
        if (ta.dtype, ta.shape, ta.stride(), ta.requires_grad) != (
                tb.dtype, tb.shape, tb.stride(), tb.requires_grad):
            return f"{key}: {ta.dtype} {tuple(ta.shape)} against {tb.dtype} {tuple(tb.shape)}"
        if not torch.equal(_bits(ta), _bits(tb)):
            return f"{key}: other values"
    return None


def save_weights(model, size, path):
    """Draws MODEL's weights at SIZE (seeded_model) and writes them, float32, to `path`
    with the generator's state after the draw; then checks that load_weights gives a
    model of the same tensors, bit for bit, tied alike, before the file takes its name (a
    temporary file renamed: the prepare processes of one model's families may write it at
    once, the same bytes). Returns the seconds it took."""
    import time
    import torch
    started = time.perf_counter()
    drawn = seeded_model(model, size)
    state = {"recipe": weights_recipe(model, size), "rng": torch.get_rng_state(),
             "tensors": {key: t.detach() for key, (t, _, _) in _slots(drawn).items()}}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    try:
        torch.save(state, partial)
        loaded, why = load_weights(model, size, partial)
        why = why or weights_differ(drawn, loaded)
        if why:
            raise RuntimeError(f"{model}'s weights file does not give the drawn model: {why}")
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return time.perf_counter() - started


def ensure_weights(model, size, path):
    """Seconds save_weights took, or None where the file is there, of this recipe."""
    return None if _read_weights(path, model, size) is not None else save_weights(
        model, size, path)


# ---- The work a configuration does -------------------------------------------------------------


WORK_COUNTS = "work_counts.json"  # in the work folder: work() of each configuration


def write_work_counts(folder, configs, size):
    """work() of each configuration, once, into FOLDER/work_counts.json: a
    child reads its configuration's there. (work() imported transformers for
    the model's sizes then, 11-17 s a process on the H100 machine, 2026-12-07,
    where coolbench's own setup and measure took about 5 s; it reads dims()
    now.)"""
    import json
    counts = {f"{size}/{c.key}": work(c, size) for c in configs}
    path = os.path.join(folder, WORK_COUNTS)
    with open(path + ".tmp", "w") as f:
        json.dump(counts, f)
    os.replace(path + ".tmp", path)


def work_counted(folder, config, size):
    """work() of config from FOLDER/work_counts.json, or computed where it is
    not there."""
    import json
    try:
        with open(os.path.join(folder, WORK_COUNTS)) as f:
            return json.load(f)[f"{size}/{config.key}"]
    except (OSError, ValueError, KeyError):
        return work(config, size)


def work(config, size="full"):
    """FLOPs of one forward (a multiply-add is 2; attention's products counted
    dense, as a GEMM computes them, causal masking or not), the weights' bytes
    in the dtype (GPT-2's tied embedding once), and the bytes a forward must
    move at the least: the weights read once, the inputs read, the outputs
    (logits, presents, hidden states) written."""
    b, s, p = config.batch, config.seq, config.past
    width = DTYPE_BYTES[config.dtype]
    if config.model == "gpt2":
        c = dims("gpt2", size)
        d, layers, vocab = c.n_embd, c.n_layer, c.vocab_size
        params = vocab * d + c.n_positions * d + layers * (12 * d * d + 13 * d) + 2 * d
        tokens = b * s
        flops = (layers * (24 * d * d * tokens + 4 * b * s * (s + p) * d) + 2 * d * vocab * tokens)
        inputs = tokens * 8 + (2 * layers * b * p * d * width)
        outputs = tokens * vocab * width + (2 * layers * b * (s + p) * d * width if p else 0)
    elif config.model == "bert":
        c = dims("bert", size)
        d, layers, inner = c.hidden_size, c.num_hidden_layers, c.intermediate_size
        params = ((c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * d + 2 * d
                  + layers * (4 * d * d + 2 * d * inner + 9 * d + inner) + d * d + d)
        tokens = b * s
        flops = (layers * ((8 * d * d + 4 * d * inner) * tokens + 4 * b * s * s * d)
                 + 2 * d * d * b)
        inputs = 3 * tokens * 8
        outputs = (tokens * d + b * d) * width
    else:
        c = dims("vit", size)
        d, layers, inner = c.hidden_size, c.num_hidden_layers, c.intermediate_size
        patch = c.num_channels * c.patch_size ** 2
        patches = (c.image_size // c.patch_size) ** 2
        params = (patch * d + d + d + (patches + 1) * d + layers * (4 * d * d + 2 * d * inner
                  + 9 * d + inner) + 2 * d + d * c.num_labels + c.num_labels)
        tokens = b * s
        flops = (2 * patch * d * b * patches
                 + layers * ((8 * d * d + 4 * d * inner) * tokens + 4 * b * s * s * d)
                 + 2 * d * c.num_labels * b)
        inputs = b * c.num_channels * c.image_size ** 2 * width
        outputs = b * c.num_labels * width
    weights = params * width
    return {"flops": flops, "parameters": params, "weight_bytes": weights,
            "bytes_min": weights + inputs + outputs}
