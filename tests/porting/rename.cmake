# The mechanical rename of docs/porting.md, applied to a LibTorch program:
#   cmake -DIN=<LibTorch source> -DOUT=<wick source> -P rename.cmake
# headers: <torch/...>, <ATen/...>, <c10/...> -> <wick/wick.h>, <c10d/...> -> <wick/distributed.h>
# (also written #include<torch/...> without the space, or #include "torch/..." in quotes);
# namespaces: c10d:: -> wick::distributed::, torch::, at::, c10:: -> wick:: (also in using
# directives); macros: TORCH_, AT_, C10_ -> WICK_.
file(READ "${IN}" text)
string(REGEX REPLACE "#include[ \t]*[<\"]c10d/[^>\"]*[>\"]" "#include <wick/distributed.h>" text "${text}")
string(REGEX REPLACE "#include[ \t]*[<\"](torch|ATen|c10)/[^>\"]*[>\"]" "#include <wick/wick.h>" text "${text}")
string(REGEX REPLACE "([^A-Za-z0-9_])c10d::" "\\1wick::distributed::" text "${text}")
string(REGEX REPLACE "([^A-Za-z0-9_])(torch|at|c10)::" "\\1wick::" text "${text}")
string(REGEX REPLACE "namespace (torch|at|c10);" "namespace wick;" text "${text}")
string(REGEX REPLACE "([^A-Za-z0-9_])(TORCH|AT|C10)_([A-Z])" "\\1WICK_\\3" text "${text}")
file(WRITE "${OUT}" "${text}")
