// The archive a checkpoint holds, for wick::load of a module or an optimizer from an archive's
// file (docs/design.md, "Archives").
#pragma once

#include "wick/serialize.h"

namespace wick::detail {

// Its tensors placed where they were saved from, its layout's metadata read back.
serialize::InputArchive input_archive(const Checkpoint& checkpoint);

}  // namespace wick::detail
