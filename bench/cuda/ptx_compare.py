#!/usr/bin/env python3
"""Which kernels two source trees compile to different PTX: proof, without a GPU, that a change
touches only the instances it means to (a refactor none), so every launch runs a kernel that a
GPU call measured. Needs nvcc only (this machine has it).

  bench/cuda/ptx_compare.py OLD_TREE NEW_TREE [MEASURED_TREE ...] [--files forward_bf16,...]

Each tree is a repository root (e.g. `git archive <commit> kernels | tar x -C /tmp/old`, or one
with a variant's patch applied). For each .cu file (default: the three forward files) every
kernel's PTX is compared after dropping what does not change the code: `.loc` / `.file` lines,
debug sections, label / local-depot numbers and names that embed a mangled kernel name. Kernels
are matched by code, not name: a kernel of NEW whose PTX no kernel of OLD has is listed with the
MEASURED trees that have it.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
SKIPPED = (".loc", ".file", ".section", ".b8")


def ptx_of(tree, name, out_dir):
    """The PTX of kernels/cuda/<name>.cu in `tree` (sm_90, as the build's -O3 flags)."""
    out = os.path.join(out_dir, f"{abs(hash(tree))}_{name}.ptx")
    cmd = [NVCC, "-O3", "-DNDEBUG", "-std=c++17", "-Ikernels", "-Ikernels/include",
           "--generate-code=arch=compute_90,code=sm_90", "-ptx", f"kernels/cuda/{name}.cu",
           "-o", out]
    subprocess.run(cmd, cwd=tree, check=True)
    return open(out).read()


def kernels(ptx):
    """{mangled kernel name: its PTX, normalized}."""
    out = {}
    for part in re.split(r"(?=^\.visible \.entry )", ptx, flags=re.M)[1:]:
        name = re.match(r"\.visible \.entry (\w+)", part).group(1)
        body = "\n".join(line for line in part.split("\n")
                         if not line.strip().startswith(SKIPPED))
        body = re.sub(r"\$L__BB\d+_", "$L__BB_", body)
        body = re.sub(r"__local_depot\d+", "__local_depot", body)
        # Names that carry a kernel's own (or the next kernel's) mangled name, which changes with
        # its template parameters though the code does not: a static __shared__ array, and the
        # next entry's `// .globl` comment.
        body = re.sub(r"_ZZN\w*?E\d+\w+", "STATIC", body)
        body = re.sub(r"\s*// \.globl\s+\w+", "", body)
        out[name] = body.replace(name, "KERNEL")
    return out


def demangled(names):
    text = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                          text=True).stdout
    return {n: d.replace("normserve::kernels::cuda::", "") for n, d in zip(names, text.split("\n"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("measured", nargs="*")
    parser.add_argument("--files", default="forward_bf16,forward_f32,forward_f16")
    args = parser.parse_args()
    unproven = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.files.split(","):
            old, new = (kernels(ptx_of(t, name, tmp)) for t in (args.old, args.new))
            measured = {t: kernels(ptx_of(t, name, tmp)) for t in args.measured}
            if set(old) != set(new):
                print(f"{name}: kernels added {len(set(new) - set(old))}, "
                      f"removed {len(set(old) - set(new))}")
            # By code, not name: a kernel whose template parameters were renamed or added to
            # keeps its PTX under another mangled name.
            old_bodies = set(old.values())
            changed = [k for k in new if new[k] not in old_bodies]
            names = demangled(changed)
            for k in changed:
                same = [t for t, m in measured.items() if new[k] in set(m.values())]
                unproven += not same
                print(f"  changed: {names[k][:160]}\n    same PTX in: {same or 'none'}")
            print(f"{name}: {len(new) - len(changed)} of {len(new)} kernels' PTX found in "
                  f"{args.old}")
    sys.exit(1 if unproven and args.measured else 0)


if __name__ == "__main__":
    main()
