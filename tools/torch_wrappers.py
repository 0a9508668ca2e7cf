"""The wrappers that give transformers' models plain tensors in and out (what the exporters
take), in a module that imports torch alone: bench/vs_torch_models.py builds its measured
models with them in processes that export nothing, where export_gpt2_torch's and
export_models' import of onnx cost 0.6-0.7 s each (a CPU of 2 cores, torch 2.11). Both
modules import them from here, under the names they had there.
"""
import torch


class LogitsOnly(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        # An explicit all-ones mask, as a user passes it: without one,
        # transformers 5 looks for packed sequences with torch.diff, which the
        # TorchScript exporter cannot export.
        mask = torch.ones_like(input_ids)
        return self.model(input_ids=input_ids, attention_mask=mask, use_cache=False).logits


def cache_layer(cache, i):
    """(key, value) of layer i, across the cache layouts transformers used."""
    if hasattr(cache, "layers"):
        return cache.layers[i].keys, cache.layers[i].values
    if hasattr(cache, "key_cache"):
        return cache.key_cache[i], cache.value_cache[i]
    return cache[i][0], cache[i][1]


class BertOutputs(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids)
        return out.last_hidden_state, out.pooler_output


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model(pixel_values=pixel_values).logits
