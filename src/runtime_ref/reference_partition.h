// Reference partitions: nodes no native kernel claims run as a small graph on the reference
// interpreter. The step carries the graph as text IR (params.strings["ir"], constants inside
// subgraphs printed in full); its inputs bind the partition graph's inputs in order and its
// outputs are the graph's outputs. Output dims are known only once it has run, so they are not
// planned in the arena.
#pragma once

namespace kiln::runtime_ref {

// Installs the reference-partition kernel into the runtime's registry. Idempotent.
void EnableReferencePartitions();

}  // namespace kiln::runtime_ref
