/* The row template (softmax, normalizations and other per-row passes):
 * rows in parallel, the passes lowering names independent vectorized. */
#include "template_internal.h"

ingot_status_t template_row_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  space_add_common(p, mask, space);
  space_add_layout(p, mask, space);
  return INGOT_OK;
}

ingot_status_t template_row_plan(plan_t* p) { return plan_stages(p); }
