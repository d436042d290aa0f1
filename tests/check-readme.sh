#!/bin/sh
# The C example in README.md compiles without warnings and runs.
cd "$(dirname "$0")/.." || exit 1
mkdir -p build/readme
awk '/^```c$/{on=1; next} /^```$/{if (on) exit} on' README.md > build/readme/example.c
STB=$(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb)
LIBSTB=$(pkg-config --libs stb 2>/dev/null || echo -lstb)
if [ -s build/readme/example.c ] &&
   cc -std=c99 -Wall -Wextra -Werror -I. $STB build/readme/example.c \
      -o build/readme/example $LIBSTB -lm -ldl 2>build/readme/log && build/readme/example >/dev/null
then echo "PASS readme: the C example builds and runs"
else echo "FAIL readme: the C example does not build or run"; cat build/readme/log >&2; fi
