/* The CANN umbrella header: base types and runtime calls. */
#ifndef GRIDSAMPLE_ACL_ACL_H
#define GRIDSAMPLE_ACL_ACL_H

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#endif
