/* Compiled as part of graph/: lower/ comes after graph/ in the data flow, so
 * its header must not be found (the build of this file fails). */
#include "graph/graph.h"
#include "lower/ir.h"

int layering_wrong_include(void) { return 0; }
