/* Compiled as part of graph/: the headers of graph/ and of the stages it
 * links (base/, runtime/) are visible. */
#include "base/base.h"
#include "graph/graph.h"
#include "runtime/ingot.h"

int layering_sees_linked(void) { return INGOT_OK; }
