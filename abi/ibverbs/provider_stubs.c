/* rdma-core's provider interface (IBVERBS_PRIVATE_34) and the old
 * kernel-structure helpers. No provider ever runs here: libmlx5 and
 * libefa, which perftest links, register themselves from their
 * constructors and import these symbols, so they must exist; a driver
 * call that still reached one fails with ENOSYS. Deliberately not
 * declared from rdma-core's headers (driver.h is not installed), hence
 * the own prototypes. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#define ENOSYS_STUB(name)          \
	int name(void);            \
	int name(void)             \
	{                          \
		errno = ENOSYS;    \
		return ENOSYS;     \
	}
#define NULL_STUB(name)            \
	void *name(void);          \
	void *name(void)           \
	{                          \
		errno = ENOSYS;    \
		return NULL;       \
	}
#define VOID_STUB(name)            \
	void name(void);           \
	void name(void)            \
	{                          \
	}

bool verbs_allow_disassociate_destroy;

/* A provider's constructor registers it: nothing is matched against it. */
VOID_STUB(verbs_register_driver_34)
VOID_STUB(verbs_set_ops)
VOID_STUB(verbs_uninit_context)
VOID_STUB(verbs_init_cq)
VOID_STUB(__verbs_log)
NULL_STUB(_verbs_init_and_alloc_context)
NULL_STUB(ibv_get_sysfs_path)
ENOSYS_STUB(ibv_copy_path_rec_from_kern)
ENOSYS_STUB(ibv_copy_path_rec_to_kern)
ENOSYS_STUB(ibv_copy_qp_attr_from_kern)
ENOSYS_STUB(ibv_read_sysfs_file)
ENOSYS_STUB(ibv_copy_ah_attr_from_kern)
ENOSYS_STUB(__ioctl_final_num_attrs)
ENOSYS_STUB(execute_ioctl)
ENOSYS_STUB(ibv_read_ibdev_sysfs_file)
ENOSYS_STUB(verbs_open_device)
ENOSYS_STUB(ibv_query_gid_type)
ENOSYS_STUB(ibv_cmd_advise_mr)
ENOSYS_STUB(ibv_cmd_alloc_dm)
ENOSYS_STUB(ibv_cmd_alloc_mw)
ENOSYS_STUB(ibv_cmd_alloc_pd)
ENOSYS_STUB(ibv_cmd_attach_mcast)
ENOSYS_STUB(ibv_cmd_close_xrcd)
ENOSYS_STUB(ibv_cmd_create_ah)
ENOSYS_STUB(ibv_cmd_create_counters)
ENOSYS_STUB(ibv_cmd_create_cq)
ENOSYS_STUB(ibv_cmd_create_cq_ex)
ENOSYS_STUB(ibv_cmd_create_flow)
ENOSYS_STUB(ibv_cmd_create_flow_action_esp)
ENOSYS_STUB(ibv_cmd_create_qp)
ENOSYS_STUB(ibv_cmd_create_qp_ex)
ENOSYS_STUB(ibv_cmd_create_qp_ex2)
ENOSYS_STUB(ibv_cmd_create_rwq_ind_table)
ENOSYS_STUB(ibv_cmd_create_srq)
ENOSYS_STUB(ibv_cmd_create_srq_ex)
ENOSYS_STUB(ibv_cmd_create_wq)
ENOSYS_STUB(ibv_cmd_dealloc_mw)
ENOSYS_STUB(ibv_cmd_dealloc_pd)
ENOSYS_STUB(ibv_cmd_dereg_mr)
ENOSYS_STUB(ibv_cmd_destroy_ah)
ENOSYS_STUB(ibv_cmd_destroy_counters)
ENOSYS_STUB(ibv_cmd_destroy_cq)
ENOSYS_STUB(ibv_cmd_destroy_flow)
ENOSYS_STUB(ibv_cmd_destroy_flow_action)
ENOSYS_STUB(ibv_cmd_destroy_qp)
ENOSYS_STUB(ibv_cmd_destroy_rwq_ind_table)
ENOSYS_STUB(ibv_cmd_destroy_srq)
ENOSYS_STUB(ibv_cmd_destroy_wq)
ENOSYS_STUB(ibv_cmd_detach_mcast)
ENOSYS_STUB(ibv_cmd_free_dm)
ENOSYS_STUB(ibv_cmd_get_context)
ENOSYS_STUB(ibv_cmd_modify_cq)
ENOSYS_STUB(ibv_cmd_modify_flow_action_esp)
ENOSYS_STUB(ibv_cmd_modify_qp)
ENOSYS_STUB(ibv_cmd_modify_qp_ex)
ENOSYS_STUB(ibv_cmd_modify_srq)
ENOSYS_STUB(ibv_cmd_modify_wq)
ENOSYS_STUB(ibv_cmd_open_qp)
ENOSYS_STUB(ibv_cmd_open_xrcd)
ENOSYS_STUB(ibv_cmd_poll_cq)
ENOSYS_STUB(ibv_cmd_post_recv)
ENOSYS_STUB(ibv_cmd_post_send)
ENOSYS_STUB(ibv_cmd_post_srq_recv)
ENOSYS_STUB(ibv_cmd_query_context)
ENOSYS_STUB(ibv_cmd_query_device_any)
ENOSYS_STUB(ibv_cmd_query_mr)
ENOSYS_STUB(ibv_cmd_query_port)
ENOSYS_STUB(ibv_cmd_query_qp)
ENOSYS_STUB(ibv_cmd_query_srq)
ENOSYS_STUB(ibv_cmd_read_counters)
ENOSYS_STUB(ibv_cmd_reg_dm_mr)
ENOSYS_STUB(ibv_cmd_reg_dmabuf_mr)
ENOSYS_STUB(ibv_cmd_reg_mr)
ENOSYS_STUB(ibv_cmd_req_notify_cq)
ENOSYS_STUB(ibv_cmd_rereg_mr)
ENOSYS_STUB(ibv_cmd_resize_cq)
