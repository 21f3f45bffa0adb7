#!/usr/bin/env python3
"""Every layer of src/ can include its own headers and those of the
layers below it, and no header of a layer above (or of a sibling).

  layers_check.py SOURCE_ROOT LAYER_ARGS VISIBLE CC...

LAYER_ARGS is a JSON object: layer -> the -iquote arguments of its own
folder, as src/meson.build gives them to its library. VISIBLE is a JSON
object: layer -> the layers its code may use (itself included). For every
layer and every header of src/, a one-line file including the header is
compiled with the arguments the layer's library has: it must compile when
the header's layer is visible, and fail when it is not. A layer that
could reach upward would pass the first half and fail the second.
"""
import json
import os
import subprocess
import sys
import tempfile


def compiles(cc, args, header):
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write('#include "%s"\nint tps_layers_check;\n' % header)
        path = f.name
    try:
        r = subprocess.run(cc + ["-std=c17", "-D_POSIX_C_SOURCE=200809L",
                                 "-fsyntax-only", path] + args,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        return r.returncode == 0
    finally:
        os.unlink(path)


def main():
    root = sys.argv[1]
    layer_args = json.loads(sys.argv[2])
    visible = json.loads(sys.argv[3])
    cc = sys.argv[4:]
    headers = {}
    for layer in layer_args:
        folder = os.path.join(root, "src", layer)
        headers[layer] = sorted(h for h in os.listdir(folder)
                                if h.endswith(".h"))
    problems = checked = 0
    for layer, sees in visible.items():
        args = [a for l in sees for a in layer_args[l]]
        for owner, names in headers.items():
            for h in names:
                want = owner in sees
                got = compiles(cc, args, h)
                checked += 1
                if got != want:
                    problems += 1
                    print("src/%s can%s include src/%s/%s" % (
                        layer, "not" if want else "", owner, h))
    print("%d includes checked across %d layers, %d problems"
          % (checked, len(visible), problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
