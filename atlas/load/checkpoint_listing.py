"""Read a checkpoint's tensor listing (names, shapes, dtypes, bytes on disk) without reading its weights.

- `.safetensors`: the header only: an 8-byte little-endian length, then that many bytes of JSON
  (https://github.com/huggingface/safetensors#format). The tensor data is never read.
- `*.index.json`: a sharded checkpoint's `weight_map`; each shard is read as above.
- `.pt`, `.pth`, `.bin`, `.ckpt`: a torch state dict, opened with `torch.load(mmap=True, weights_only=True)`,
  so its storages are mapped, never read into memory.
- a directory: the file `save_pretrained` writes there.

Every problem is an AtlasError with a one-line message: a missing file, a corrupt header, an index that
names an absent shard, or a file that holds no state dict.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from atlas.errors import AtlasError, where

# The safetensors dtypes and their sizes in bits, with torch's names for them.
SAFETENSORS_DTYPES = {
    "BOOL": ("bool", 8), "U8": ("uint8", 8), "I8": ("int8", 8), "I16": ("int16", 16), "U16": ("uint16", 16),
    "F16": ("float16", 16), "BF16": ("bfloat16", 16), "I32": ("int32", 32), "U32": ("uint32", 32),
    "F32": ("float32", 32), "F64": ("float64", 64), "I64": ("int64", 64), "U64": ("uint64", 64),
    "C64": ("complex64", 64), "F8_E4M3": ("float8_e4m3fn", 8), "F8_E5M2": ("float8_e5m2", 8),
    "F8_E8M0": ("float8_e8m0fnu", 8),
}
HEADER_LIMIT = 100_000_000      # bytes; the safetensors library refuses larger headers too
TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")
# What `save_pretrained` writes into a directory, in the order transformers looks for it.
DIRECTORY_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                   "pytorch_model.bin.index.json")
# Keys under which training scripts nest the state dict in a torch checkpoint.
NESTED_KEYS = ("state_dict", "model_state_dict", "model", "module")


@dataclass(frozen=True)
class SavedTensor:
    name: str                       # as the checkpoint spells it
    shape: tuple[int, ...]
    dtype: str                      # torch's name, e.g. "float32"
    nbytes: int                     # bytes on disk that this tensor adds (0 for a view of a storage already counted)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Listing:
    path: str                       # as pages show it
    format: str
    file: str                       # the name of the file read first
    shards: int
    sha256: str
    hashed: str                     # "header", "index" or "listing"
    tensors: tuple[SavedTensor, ...]


def display_path(path: Path, given: str) -> str:
    """The path relative to the working folder where it lies inside it, else its name: no page depends on
    where a machine keeps its files."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(given).name or given


def locate(given: str, base: str | Path | None = None) -> Path:
    """The file to read first; relative paths are taken from `base`, else the working folder. Cheap: the pipeline
    calls it before the slow stages, so that a wrong path fails at once."""
    path = Path(given).expanduser()
    if not path.is_absolute() and base is not None:
        path = Path(base) / path
    if not path.exists():
        raise AtlasError(f"checkpoint {given}: no such file or directory")
    if path.is_dir():
        found = next((path / name for name in DIRECTORY_FILES if (path / name).is_file()), None)
        if found is None:
            raise AtlasError(f"checkpoint {given}: the directory holds none of {', '.join(DIRECTORY_FILES)}")
        path = found
    if not path.name.endswith((".index.json", ".safetensors", *TORCH_SUFFIXES)):
        raise AtlasError(f"checkpoint {given}: not a checkpoint this atlas reads (.safetensors, *.index.json, "
                         f"{', '.join(TORCH_SUFFIXES)}, or a directory that save_pretrained wrote)")
    return path


def read(given: str, base: str | Path | None = None) -> Listing:
    """The checkpoint at `given`: its tensors' names, shapes, dtypes and bytes, and the hash pages cite."""
    path = locate(given, base)
    full = Path(given).expanduser()
    shown = display_path(full if full.is_absolute() or base is None else Path(base) / full, given)
    name = path.name
    if name.endswith(".index.json"):
        return _index(path, given, shown)
    if name.endswith(".safetensors"):
        header, tensors = safetensors_header(path, given)
        return Listing(shown, "safetensors", name, 1, hashlib.sha256(header).hexdigest(), "header", tensors)
    tensors = torch_tensors(path, given)
    return Listing(shown, "torch", name, 1, listing_hash(tensors), "listing", tensors)


def safetensors_header(path: Path, given: str) -> tuple[bytes, tuple[SavedTensor, ...]]:
    """(the header's JSON bytes, its tensors in the header's order); only the header is read."""
    def corrupt(why: str) -> AtlasError:
        return AtlasError(f"checkpoint {given}: corrupt safetensors header in {path.name}: {why}")

    size = path.stat().st_size
    with path.open("rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise corrupt(f"the file is {size} bytes, shorter than the 8-byte header length")
        (length,) = struct.unpack("<Q", prefix)
        if length > min(HEADER_LIMIT, size - 8):
            raise corrupt(f"it declares {length} header bytes in a file of {size}")
        header = f.read(length)
    try:
        entries = json.loads(header)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise corrupt(f"not JSON ({exc})") from None
    if not isinstance(entries, dict):
        raise corrupt("not a JSON object")
    data_size = size - 8 - length
    tensors = []
    for key, entry in entries.items():
        if key == "__metadata__":
            continue
        tensors.append(_safetensors_entry(key, entry, data_size, corrupt))
    return header, tuple(tensors)


def _safetensors_entry(key: str, entry, data_size: int, corrupt) -> SavedTensor:
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= set(entry):
        raise corrupt(f"{key!r} lacks dtype, shape or data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in SAFETENSORS_DTYPES:
        raise corrupt(f"{key!r} has the unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise corrupt(f"{key!r} has the shape {shape!r}")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= data_size):
        raise corrupt(f"{key!r} has the data offsets {offsets!r}, outside the {data_size} data bytes")
    torch_name, bits = SAFETENSORS_DTYPES[dtype]
    nbytes = offsets[1] - offsets[0]
    if math.prod(shape) * bits // 8 != nbytes:
        raise corrupt(f"{key!r} is {dtype}{shape} but spans {nbytes} bytes")
    return SavedTensor(key, tuple(shape), torch_name, nbytes)


def torch_tensors(path: Path, given: str) -> tuple[SavedTensor, ...]:
    """A torch state dict's tensors, in its order; storages are memory-mapped, never read."""
    import torch
    try:
        obj = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception as exc:  # a corrupt archive, a legacy (non-zip) file, or objects weights_only refuses
        raise AtlasError(f"checkpoint {given}: torch.load(mmap=True, weights_only=True) cannot read "
                         f"{path.name}: {where(exc)}") from None
    state = _state_dict(obj)
    if state is None:
        raise AtlasError(f"checkpoint {given}: {path.name} holds no state dict (a mapping of names to tensors)")
    tensors, seen = [], set()
    for name, t in state.items():
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        nbytes = 0 if key in seen else storage.nbytes()       # a storage shared by tied tensors is saved once
        seen.add(key)
        tensors.append(SavedTensor(str(name), tuple(int(s) for s in t.shape),
                                   str(t.dtype).removeprefix("torch."), nbytes))
    del state, obj                                            # unmap the file
    return tuple(tensors)


def _state_dict(obj):
    import torch
    if not isinstance(obj, dict):
        return None
    for key in NESTED_KEYS:
        inner = obj.get(key)
        if isinstance(inner, dict) and inner and all(isinstance(v, torch.Tensor) for v in inner.values()):
            return inner
    tensors = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    return tensors or None


def listing_hash(tensors) -> str:
    """sha256 of one UTF-8 line per tensor, in the file's order: name, dtype and shape, tab-separated."""
    text = "".join(f"{t.name}\t{t.dtype}\t{','.join(str(d) for d in t.shape)}\n" for t in tensors)
    return hashlib.sha256(text.encode()).hexdigest()


def _index(path: Path, given: str, shown: str) -> Listing:
    raw = path.read_bytes()
    try:
        index = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AtlasError(f"checkpoint {given}: {path.name} is not JSON ({exc})") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise AtlasError(f"checkpoint {given}: {path.name} has no weight_map of tensor names to shard files")
    shards: dict[str, dict[str, SavedTensor]] = {}
    for shard in dict.fromkeys(weight_map.values()):
        file = path.parent / shard
        if not file.is_file():
            raise AtlasError(f"checkpoint {given}: {path.name} names the shard {shard}, which does not exist")
        if shard.endswith(".safetensors"):
            listed = safetensors_header(file, given)[1]
        elif shard.endswith(TORCH_SUFFIXES):
            listed = torch_tensors(file, given)
        else:
            raise AtlasError(f"checkpoint {given}: {path.name} names the shard {shard}, of a type this atlas "
                             "does not read")
        shards[shard] = {t.name: t for t in listed}
    tensors = []
    for name, shard in weight_map.items():
        if name not in shards[shard]:
            raise AtlasError(f"checkpoint {given}: {path.name} places {name} in {shard}, which does not hold it")
        tensors.append(shards[shard][name])
    kind = "safetensors-sharded" if all(s.endswith(".safetensors") for s in shards) else "torch-sharded"
    return Listing(shown, kind, path.name, len(shards), hashlib.sha256(raw).hexdigest(), "index", tuple(tensors))
