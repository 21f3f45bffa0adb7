#include "nn_event.h"

#include <stddef.h>

const char *const tps_phase_names[] = {"setup", "forward", "backward",
				       "optimizer", NULL};
const char *const tps_event_kind_names[] = {"compute", "collective", "layout",
					    NULL};

enum tps_status tps_event_emit(struct tps_event_sink sink,
			       const struct tps_event *ev,
			       struct tps_error *err)
{
	return sink.emit ? sink.emit(sink.ctx, ev, err) : TPS_OK;
}
