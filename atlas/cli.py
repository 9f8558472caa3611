"""`atlas build | check | describe`: argument parsing and reporting; the work is in atlas.build."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings

from atlas.errors import AtlasError

EXIT_OK, EXIT_STALE, EXIT_BAD_INPUT = 0, 1, 2       # 1: stale pages, or equations that disagree with forward()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="atlas", description="Documentation pages generated from PyTorch model code.")
    sub = p.add_subparsers(dest="command", required=True)
    input_help = ("an example input of the model's forward(), e.g. 'input_ids:int64[B,T]'; repeat for each; "
                  "overrides the model's atlas_inputs")
    spec_help = "'package.module:callable' or 'path/to/file.py:callable' returning an nn.Module (default: the LDLM)"
    checkpoint_help = ("a checkpoint to reconcile with the code, without loading its weights: a .safetensors file, "
                       "a sharded *.index.json, a torch .pt/.bin state dict, or a save_pretrained directory")
    b = sub.add_parser("build", help="generate pages into the docs folder, writing only what changed")
    b.add_argument("specs", nargs="*", metavar="SPEC", help=spec_help)
    b.add_argument("--docs", default="docs", help="docs folder (default: docs)")
    b.add_argument("--input", action="append", metavar="NAME:DTYPE[DIMS]", help=input_help)
    b.add_argument("--memory-budget", type=_gigabytes, default=2.0, metavar="GB",
                   help="largest instance materialized on the CPU to verify equations (default: 2)")
    b.add_argument("--checkpoint", metavar="PATH", help=checkpoint_help)
    c = sub.add_parser("check", help="regenerate in memory and compare with the docs folder; exit 1 if stale")
    c.add_argument("specs", nargs="*", metavar="SPEC", help=spec_help)
    c.add_argument("--docs", default="docs", help="docs folder (default: docs)")
    c.add_argument("--input", action="append", metavar="NAME:DTYPE[DIMS]", help=input_help)
    c.add_argument("--memory-budget", type=_gigabytes, default=2.0, metavar="GB",
                   help="largest instance materialized on the CPU to verify equations (default: 2)")
    c.add_argument("--checkpoint", metavar="PATH", help=checkpoint_help)
    d = sub.add_parser("describe", help="print the component tree")
    d.add_argument("spec", nargs="?", metavar="SPEC", help=spec_help)
    d.add_argument("--json", action="store_true", help="print JSON (the schema is in README)")
    d.add_argument("--verify", action="store_true",
                   help="also run every component's equations against forward() (build and check always do)")
    d.add_argument("--input", action="append", metavar="NAME:DTYPE[DIMS]", help=input_help)
    d.add_argument("--memory-budget", type=_gigabytes, default=2.0, metavar="GB",
                   help="largest instance materialized on the CPU to verify equations (default: 2)")
    d.add_argument("--checkpoint", metavar="PATH", help=checkpoint_help)
    return p




def _gigabytes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of gigabytes: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the memory budget must be positive")
    return value


def _settings(args):
    from atlas.pipeline import Settings, mkdocs_settings
    if args.checkpoint and len(getattr(args, "specs", ())) > 1:
        raise AtlasError(f"--checkpoint belongs to one model: give one SPEC, not {len(args.specs)}")
    site = mkdocs_settings(getattr(args, "mkdocs", "mkdocs.yml"))
    return Settings(tuple(args.input) if args.input else None, int(args.memory_budget * 1024**3),
                    site.get("site_url"), site.get("repo_url"), site.get("site_name", "Model Atlas"),
                    verify=getattr(args, "verify", True), checkpoint=args.checkpoint)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="atlas: %(message)s")
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    args = _parser().parse_args(argv)
    from atlas import progress
    progress.enable()
    from atlas.equations.enrich import EquationMismatch
    try:
        return _run(args)
    except EquationMismatch as exc:
        print(f"atlas: error: {exc}", file=sys.stderr)
        return EXIT_STALE
    except AtlasError as exc:
        print(f"atlas: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("atlas: interrupted; the docs folder is as it was before the last file move", file=sys.stderr)
        return 130


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


def _run(args) -> int:
    from atlas import pipeline as atlas_build
    from atlas import serialize
    from atlas.spec import DEFAULT_SPEC, load

    if args.command == "describe":
        doc = atlas_build.document(load(args.spec or DEFAULT_SPEC), _settings(args))
        if args.json:
            sys.stdout.write(serialize.dumps(serialize.as_dict(doc)))
        else:
            for comp in doc.components:
                depth = comp.id.count(".") + 1 if comp.id else 0
                print(f"{'  ' * depth}{comp.name}  ×{comp.instances}  {comp.parameters_per_instance:,}")
            t = doc.totals
            print(f"total {t.parameters:,} (trained {t.trained:,}, frozen {t.frozen:,}); buffers {t.buffers:,}")
            if doc.checkpoint is not None:
                print(_checkpoint_summary(doc))
        return EXIT_OK
    if args.command == "build":
        generated, report = atlas_build.build(args.specs, args.docs, _settings(args))
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
    generated, diffs = atlas_build.check(args.specs, args.docs, _settings(args))
    problems = _checkpoint_problems(generated.docs)
    for line in problems:
        print(line, file=sys.stderr)
    if diffs:
        print(f"atlas: {len(diffs)} generated files differ from {args.docs}/; run `atlas build`:", file=sys.stderr)
        for d in diffs:
            print(f"  {d.status}: {d.path}", file=sys.stderr)
    if diffs or problems:
        return EXIT_STALE
    for doc in generated.docs:
        if doc.checkpoint is not None:
            print(_checkpoint_summary(doc))
    print(f"atlas: {len(generated.files)} generated files match {args.docs}/")
    return EXIT_OK
