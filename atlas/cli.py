"""`atlas build | check | describe`: argument parsing and reporting; the work is in atlas.pipeline (describe) and
atlas.site.builder (build, check)."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import warnings
from pathlib import Path

from atlas.errors import AtlasError
from atlas.load import memory

EXIT_OK, EXIT_STALE, EXIT_BAD_INPUT = 0, 1, 2       # 1: stale pages, or equations that disagree with forward()


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr, naming --help, and exit 2 (argparse prints its usage block first)."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="atlas", description="Documentation pages generated from PyTorch model code.")
    sub = p.add_subparsers(dest="command", required=True)
    common = _Parser(add_help=False)
    common.add_argument("--input", action="append", metavar="NAME:DTYPE[DIMS]",
                        help="an example input of the model's forward(), e.g. 'input_ids:int64[B,T]'; repeat for each; "
                             "overrides the model's atlas_inputs and the inputs the atlas finds itself")
    common.add_argument("--dim", action="append", metavar="SYMBOL=SIZE", type=_dim,
                        help="fix a symbolic dim (T=64) or bound it (T>=400, T<=512); repeat for each")
    common.add_argument("--strict", action="store_true",
                        help="exit 1 when the model's own forward() does not run on the example inputs")
    common.add_argument("--memory-budget", type=_gigabytes, metavar="GB",
                        help="largest instance materialized on the CPU to verify equations, its parameters and its "
                             "largest tensor at the recorded sizes (default: 2; for the models of mkdocs.yml, its "
                             "atlas plugin's memory_budget)")
    common.add_argument("--checkpoint", metavar="PATH",
                        help="a checkpoint to reconcile with the code, without loading its weights: a .safetensors "
                             "file, a sharded *.index.json, a torch .pt/.bin state dict, or a save_pretrained "
                             "directory")
    spec_help = ("'package.module:callable' or 'path/to/file.py:callable' returning an nn.Module; a transformers "
                 "config.json, or a save_pretrained folder (its checkpoint reconciled); 'hf:ORG/NAME' from the local "
                 "Hugging Face cache (never downloaded); 'timm:NAME'; 'torchvision:NAME' (default: the LDLM)")
    b = sub.add_parser("build", parents=[common], help="generate pages into the docs folder, writing only what changed")
    b.add_argument("specs", nargs="*", metavar="SPEC", help=spec_help)
    b.add_argument("--docs", default="docs", help="docs folder (default: docs)")
    c = sub.add_parser("check", parents=[common],
                       help="regenerate in memory and compare with the docs folder; exit 1 if stale")
    c.add_argument("specs", nargs="*", metavar="SPEC", help=spec_help)
    c.add_argument("--docs", default="docs", help="docs folder (default: docs)")
    for sp in (b, c):
        sp.add_argument("--mkdocs", metavar="PATH",
                        help="the mkdocs.yml whose site_url, repo_url and site_name the pages cite, and whose atlas "
                             "plugin's models are built or checked when no SPEC is given (default: mkdocs.yml)")
        sp.add_argument("--no-cache", action="store_true",
                        help="generate in full even when the fingerprint stored in the docs folder says nothing "
                             "changed (a file the model's factory reads is not in the fingerprint)")
    d = sub.add_parser("describe", parents=[common], help="print the component tree")
    d.add_argument("spec", nargs="?", metavar="SPEC", help=spec_help)
    d.add_argument("--json", action="store_true",
                   help="print JSON (its schema: atlas/render/schema/model.schema.json, read in the Guide's JSON page)")
    d.add_argument("--verify", action="store_true",
                   help="also run every component's equations against forward() (build and check always do)")
    d.add_argument("--no-cost", action="store_true", help="leave out FLOPs and activation memory")
    i = sub.add_parser("init", help="write mkdocs.yml, docs/index.md, a CI workflow and a pre-commit hook for a "
                                    "model repository; never overwrites a file")
    i.add_argument("spec", nargs="?", metavar="SPEC", help=spec_help)
    return p


def _dim(text: str) -> tuple:
    """'T=64' -> ("fix", "T", 64); 'T>=400' -> ("min", "T", 400); 'T<=512' -> ("max", "T", 512)."""
    import re
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|>=|<=)\s*(-?\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad --dim {text!r}: expected SYMBOL=SIZE, SYMBOL>=SIZE or SYMBOL<=SIZE")
    if int(m.group(3)) < 1:
        raise argparse.ArgumentTypeError(f"bad --dim {text!r}: a size is a positive whole number")
    return ({"=": "fix", ">=": "min", "<=": "max"}[m.group(2)], m.group(1), int(m.group(3)))


def _gigabytes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of gigabytes: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the memory budget must be positive")
    return value


def _models(args) -> tuple:
    """A build's or check's models and settings: the SPECs given; with none, the atlas plugin's models in mkdocs.yml
    (atlas.site.plugin_models, as the plugin reads them: its memory_budget, checkpoints from mkdocs.yml's folder);
    without that plugin, the LDLM."""
    from atlas.site import plugin_models
    if args.mkdocs is not None and not Path(args.mkdocs).is_file():
        raise AtlasError(f"--mkdocs {args.mkdocs}: no such file")
    args.mkdocs = args.mkdocs or "mkdocs.yml"
    plugin = None if args.specs else plugin_models.read(args.mkdocs)
    specs = args.specs or (plugin.specs if plugin is not None else [])
    if args.checkpoint and len(specs) > 1:
        raise AtlasError(f"--checkpoint belongs to one model: give one SPEC, not {len(specs)}"
                         + ("" if args.specs else f" (the models of {args.mkdocs})"))
    return specs or None, _settings(args, plugin)


def _settings(args, plugin=None):
    from atlas.load.settings import Settings, mkdocs_settings
    site = mkdocs_settings(getattr(args, "mkdocs", "mkdocs.yml"))
    budget = args.memory_budget or (plugin.memory_budget if plugin is not None else memory.DEFAULT_BUDGET_GB)
    dims = args.dim or []
    bounds: dict = {}
    for kind, sym, size in dims:
        low, high = bounds.get(sym, (None, None))
        bounds[sym] = (size, high) if kind == "min" else (low, size) if kind == "max" else (low, high)
    return Settings(tuple(args.input) if args.input else None, int(budget * 1024**3),
                    site.get("site_url"), site.get("repo_url"), site.get("site_name", "Model Atlas"),
                    verify=getattr(args, "verify", True), checkpoint=args.checkpoint,
                    cost=not getattr(args, "no_cost", False),
                    fixed_dims=tuple((sym, size) for kind, sym, size in dims if kind == "fix"),
                    dim_bounds=tuple((sym, lo, hi) for sym, (lo, hi) in bounds.items()),
                    base_dir=plugin.base_dir if plugin is not None else None)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="atlas: %(message)s")
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    # torch's fake-tensor and shape loggers narrate failures and assumptions the atlas reports itself, in one line
    for name in ("torch._subclasses.fake_tensor", "torch.fx.experimental.symbolic_shapes"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    args = _parser().parse_args(argv)
    if args.command == "init":
        return _init(args.spec)
    if getattr(args, "verify", True):
        # checking equations materializes instance after instance: their memory is kept for the next one; a
        # describe without --verify runs on the meta device, materializes no instances, and keeps glibc's
        # defaults, which hand freed memory back and so keep its peak lower
        memory.keep_freed_memory()
    from atlas import progress
    progress.enable()
    from atlas.analyse.equations.derive import EquationMismatch
    try:
        return _run(args)
    except EquationMismatch as exc:
        if exc.doc is not None:         # how the inputs were found and the fallbacks taken: the failure's context
            _inputs_report([exc.doc], False, bool(args.input))
        print(f"atlas: error: {exc}", file=sys.stderr)
        return EXIT_STALE
    except AtlasError as exc:
        print(f"atlas: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("atlas: interrupted; the docs folder is as it was before the last file move", file=sys.stderr)
        return 130


def _init(spec: str | None) -> int:
    from atlas.site import project_files
    try:
        written = project_files.init(spec)
    except AtlasError as exc:
        print(f"atlas: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"atlas: wrote {', '.join(written)}; next: `atlas build`, then `mkdocs build --strict`")
    local = project_files.local_origin()
    if local is not None:
        print(f"atlas: note: model-atlas was installed from {local}, which a CI machine cannot install from: edit "
              "the install step of .github/workflows/atlas.yml to name where your CI gets it", file=sys.stderr)
    return EXIT_OK


def _report(generated) -> None:
    """The one-screen summary after a build."""
    g = generated
    print(f"atlas: {', '.join(d.name for d in g.docs)}: {g.components} components; equations verified for "
          f"{g.verified}, not derived for {g.equations_not_derived}, verification not run for "
          f"{g.verification_skipped}; shapes not derived for {g.shapes_not_derived} (their pages say why)")


def _checkpoint_summary(doc) -> str:
    r = doc.checkpoint
    return (f"atlas: checkpoint {r.path} ({r.tensors} tensors) against {doc.name}: {r.matched} matched, "
            f"{len(r.tied)} tied (saved once), {len(r.missing)} missing, {len(r.unexpected)} unexpected, "
            f"{len(r.mismatched)} mismatched")


def _checkpoint_problems(docs) -> list[str]:
    """One line per tensor that is missing, unexpected or mismatched, for stderr."""
    lines = []
    for doc in docs:
        r = doc.checkpoint
        if r is None or not r.problems:
            continue
        lines.append(f"atlas: checkpoint {r.path} does not match {doc.name}: {len(r.missing)} missing, "
                     f"{len(r.unexpected)} unexpected, {len(r.mismatched)} mismatched:")
        lines += [f"  missing: {name}" for name in r.missing]
        lines += [f"  unexpected: {name}" for name in r.unexpected]
        lines += [f"  mismatched: {m.name}: code {list(m.code_shape)} {m.code_dtype}, checkpoint "
                  f"{list(m.checkpoint_shape)} {m.checkpoint_dtype}" for m in r.mismatched]
    return lines


_FORWARD_FAILED = "not run: forward() failed on the example inputs: %(error)s"


def _inputs_report(docs, strict: bool, given: bool = False) -> int:
    """On stderr: how each model's example inputs were found, and loudly, a forward that did not run: the record's
    (on fake tensors), or the real one a check ran (on tensors with values: a table of positions indexed past its
    rows, `--dim T=300` beside 256 positions)."""
    from atlas import i18n
    from atlas.analyse.cost.component_costs import uncounted_by_data
    failed = 0
    for doc in docs:
        for note in doc.input_notes:
            print(f"atlas: {doc.name}: {i18n.render(note)}", file=sys.stderr)
        if doc.forward_failure is not None:
            failed += 1
            advice = ("check the --input given against what forward() takes" if given else
                      "give example inputs with --input NAME:DTYPE[DIMS] (or atlas_inputs on the model)")
            print(f"atlas: {doc.name}: {i18n.render(doc.forward_failure)}; {advice}", file=sys.stderr)
            continue
        uncounted = uncounted_by_data(doc)       # said on each page; here once per model
        if uncounted is not None:
            print(f"atlas: {doc.name}: {i18n.render(uncounted)}", file=sys.stderr)
        real = [c for c in doc.components if c.equations is not None and c.equations.verification is not None
                and getattr(c.equations.verification.reason, "msgid", None) == _FORWARD_FAILED]
        if real:
            failed += 1
            first = real[0]
            print(f"atlas: {doc.name}: forward() failed on the inputs the check made for {len(real)} component(s), "
                  f"{first.id or '(model)'} first: {dict(first.equations.verification.reason.args)['error']}",
                  file=sys.stderr)
    return EXIT_STALE if strict and failed else EXIT_OK


def _release_rebuildable_caches() -> None:
    """Let go of what the imports left in caches that rebuild themselves on demand; the memory they free serves the
    stages after the load and, called again after them, the JSON's. The caches:
    - the source files Python's line cache holds, the ones it can read again: torch's import reads 2.7 MB of lines
      into it (torch/nn/functional.py alone 0.7 MB, for its docstrings and configs) and transformers' adds the
      model's files; nothing in a describe reads them (atlas.extract.source_spans reads files itself). Entries
      that are not files (code registered for tracebacks) stay;
    - the import system's finders, one per folder imported from (305 after transformers' import), each holding the
      listing of its folder: an import after this makes the finder of its folder again;
    - the `re` module's compiled patterns (288), made again when a pattern not held elsewhere is used again;
    - `inspect`'s maps of files to modules (2,200 entries), filled by torch's import and refilled by the next lookup
      of a file they do not know;
    - sympy's cache of the expressions it built, when the stages that compute with sympy are done."""
    import inspect
    import linecache
    import re
    for name in [name for name, entry in linecache.cache.items() if len(entry) == 4 and entry[1] is not None]:
        del linecache.cache[name]
    sys.path_importer_cache.clear()
    re.purge()
    inspect.modulesbyfile.clear()
    inspect._filesbymodname.clear()
    if "sympy" in sys.modules:
        from sympy.core.cache import clear_cache
        clear_cache()


def _run(args) -> int:
    from atlas import pipeline
    from atlas.document import serialize
    from atlas.load.spec import DEFAULT_SPEC, load

    if args.command == "describe":
        loaded = load(DEFAULT_SPEC if args.spec is None else args.spec)
        if gc.get_freeze_count():       # a one-shot process (atlas/__main__.py): the model lives to the end too
            gc.freeze()
            _release_rebuildable_caches()
        doc = pipeline.document(loaded, _settings(args))
        if gc.get_freeze_count():
            _release_rebuildable_caches()
        code = _inputs_report([doc], args.strict, bool(args.input))
        if args.json:
            from atlas.render import json_export
            serialize.dump(json_export.as_dict(doc), sys.stdout)
        else:
            from atlas.render.terminal_table import table
            print(table(doc))
            if doc.checkpoint is not None:
                print(_checkpoint_summary(doc))
        return code
    # a checkpoint and --strict judge the model, not the pages: their verdicts are never taken from the cache
    specs, settings = _models(args)
    if not (args.no_cache or args.checkpoint or args.strict):
        from atlas.site import builder
        stored = builder.unchanged(specs, args.docs, settings, checkpoints_judged=args.command == "check")
        if stored is not None:
            print(f"atlas: {len(stored['files'])} generated files match {args.docs}/; nothing they are made from "
                  "changed since they were written (the fingerprint; --no-cache regenerates in full)")
            return EXIT_OK
    from atlas.site import builder
    if args.command == "build":
        generated = builder.generate(specs, settings, args.docs)
        if _inputs_report(generated.docs, args.strict, bool(args.input)) != EXIT_OK:
            print("atlas: --strict: nothing written", file=sys.stderr)
            return EXIT_STALE
        report = builder.write(generated, args.docs)
        names = ", ".join(d.name for d in generated.docs)
        _report(generated)
        for doc in generated.docs:
            if doc.checkpoint is not None:
                print(_checkpoint_summary(doc))
        if not report.written and not report.deleted:
            print(f"atlas: {names}: {len(report.unchanged)} files unchanged; nothing written")
        else:
            print(f"atlas: {names}: {len(report.written)} written, {len(report.deleted)} deleted, "
                  f"{len(report.unchanged)} unchanged in {args.docs}/")
        return EXIT_OK
    generated, diffs = builder.check(specs, args.docs, settings)
    strict = _inputs_report(generated.docs, args.strict, bool(args.input))
    problems = _checkpoint_problems(generated.docs)
    for line in problems:
        print(line, file=sys.stderr)
    if diffs:
        print(f"atlas: {len(diffs)} generated files differ from {args.docs}/; run `atlas build`:", file=sys.stderr)
        for d in diffs:
            print(f"  {d.status}: {d.path}", file=sys.stderr)
    if diffs or problems or strict:
        return EXIT_STALE
    for doc in generated.docs:
        if doc.checkpoint is not None:
            print(_checkpoint_summary(doc))
    print(f"atlas: {len(generated.files)} generated files match {args.docs}/")
    return EXIT_OK
