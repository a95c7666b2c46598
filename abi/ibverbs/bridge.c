/* The single private entry point of libibverbs.so.1 that our
 * librdmacm.so.1 uses: the device context it hands to rdma_cm ids, the
 * engine, and libiwarp's CM (not exported by name). */
#include "iwabi.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_once_t dev_once = PTHREAD_ONCE_INIT;
static struct ibv_context *dev_ctx;

static void open_dev(void)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (l && n > 0)
		dev_ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
}

/* librdmacm's device context lives as long as the process (like
 * rdma-core's, which keeps the devices it opened). */
static struct ibv_context *device_context(void)
{
	pthread_once(&dev_once, open_dev);
	return dev_ctx;
}

static const struct iwabi_bridge bridge = {
	.version = IWABI_BRIDGE_VERSION,
	.device_context = device_context,
	.engine_get = iwabi_engine_get,
	.engine_put = iwabi_engine_put,
	.engine_drive = iwabi_engine_drive,
	.engine_wait = iwabi_engine_wait,
	.set_cm_pump = iwabi_engine_set_cm_pump,
	.qp_of = iwabi_qp_of,
	.qp_by_num = iwabi_qp_by_num,
	.cm_create_channel = iw_cm_create_channel,
	.cm_destroy_channel = iw_cm_destroy_channel,
	.cm_channel_fd = iw_cm_channel_fd,
	.cm_get_event = iw_cm_get_event,
	.cm_ack_event = iw_cm_ack_event,
	.cm_create_id = iw_cm_create_id,
	.cm_destroy_id = iw_cm_destroy_id,
	.cm_id_context = iw_cm_id_context,
	.cm_id_set_context = iw_cm_id_set_context,
	.cm_listen_param = iw_cm_listen_param,
	.cm_local_addr = iw_cm_local_addr,
	.cm_peer_addr = iw_cm_peer_addr,
	.cm_connect = iw_cm_connect,
	.cm_accept = iw_cm_accept,
	.cm_reject = iw_cm_reject,
	.cm_disconnect = iw_cm_disconnect,
	.raw_ip = iwabi_engine_raw_ip,
};

const struct iwabi_bridge *__iwarp_abi_bridge(void)
{
	return &bridge;
}
