/* The pooling template (max/average/global pooling): the window's reduce
 * loops inside the output loops and outside the vector loop; a window that
 * starts at its initial value reduces in a register (ACCUMULATE). */
#include "template_internal.h"

ingot_status_t template_pool_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  space_add_common(p, mask, space);
  space_add_update(p, mask, space, 1);
  return INGOT_OK;
}

ingot_status_t template_pool_plan(plan_t* p) { return plan_stages(p); }
