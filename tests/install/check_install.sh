#!/usr/bin/env bash
# check_install.sh BUILD_DIR SRC_DIR -- install the build into a temporary
# prefix, then compile tests/install/consumer.c against it two ways:
# pkg-config and a CMake project using find_package(acceltrace).
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name acceltrace.pc)
export PKG_CONFIG_PATH=$(dirname "$pc")
cc -o "$tmp/c1" "$src/consumer.c" $(pkg-config --cflags --libs acceltrace) \
   -Wl,-rpath,"$(pkg-config --variable=libdir acceltrace)"
"$tmp/c1" | grep -q 'consumer ok'
mkdir -p "$tmp/proj"
cat > "$tmp/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(acceltrace REQUIRED)
add_executable(c2 $src/consumer.c)
target_link_libraries(c2 PRIVATE acceltrace::acceltrace)
CM
cmake -S "$tmp/proj" -B "$tmp/proj/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/proj/b" >/dev/null
"$tmp/proj/b/c2" | grep -q 'consumer ok'
# The installed command finds its library and traces a program.
"$tmp/prefix/bin/acceltrace" run --no-summary -o "$tmp/t.json" -- true
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/t.json"
echo "install ok"
