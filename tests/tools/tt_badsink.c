/* An iwping client that lies about its sink: after the first RDMA READ it
 * advertises a sink with a wrong STag key, so the server's RDMA WRITE is
 * refused by our side with a Terminate. The server's WRITE completes
 * successfully (iWARP completes WRITEs locally); only iw_qp_error() tells
 * it what happened. Used by test_messages.sh. tt_badsink PORT; bounded to
 * 20 s; exit 0 when our side terminated the connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <iwarp/cm.h>
#include <iwarp/verbs.h>

static void put_advert(uint8_t *p, const void *addr, uint32_t rkey, uint32_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;

	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(a >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		p[8 + i] = (uint8_t)(rkey >> (24 - 8 * i));
		p[12 + i] = (uint8_t)(len >> (24 - 8 * i));
	}
}

int main(int argc, char **argv)
{
	static uint8_t src[64] = "rdma-ping-0: ABCDEFG", sink[64], ctl[48];
	const unsigned rw = IW_ACCESS_LOCAL_WRITE | IW_ACCESS_REMOTE_WRITE | IW_ACCESS_REMOTE_READ;
	struct iw_context *ctx;
	struct iw_pd *pd;
	struct iw_cq *cq;
	struct iw_cm_channel *ch;
	struct iw_cm_id *id;
	struct iw_mr *src_mr, *sink_mr, *ctl_mr;
	struct iw_qp *qp;
	struct iw_qp_init_attr qa = { 0 };
	struct iw_conn_param p = { .ird = 1, .ord = 1 };
	struct sockaddr_in dst = { .sin_family = AF_INET };
	int recvs = 0, rc = 1;
	time_t end = time(NULL) + 20;

	if (argc != 2)
		return 2;
	dst.sin_port = htons((uint16_t)atoi(argv[1]));
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (iw_context_create(NULL, &ctx) || iw_alloc_pd(ctx, &pd) || iw_create_cq(ctx, 16, NULL, &cq) ||
	    iw_cm_create_channel(ctx, &ch) || iw_cm_create_id(ch, NULL, &id) ||
	    iw_reg_mr(pd, src, sizeof(src), rw, &src_mr) || iw_reg_mr(pd, sink, sizeof(sink), rw, &sink_mr) ||
	    iw_reg_mr(pd, ctl, sizeof(ctl), IW_ACCESS_LOCAL_WRITE, &ctl_mr))
		return 3;
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 2;
	qa.sq_sig_all = true;
	if (iw_create_qp(pd, &qa, &qp))
		return 3;
	struct iw_sge rsge = { (uintptr_t)ctl, 16, iw_mr_stag(ctl_mr) };
	struct iw_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct iw_sge ssge = { (uintptr_t)(ctl + 16), 16, iw_mr_stag(ctl_mr) };
	struct iw_send_wr swr = { .wr_id = 2, .sg_list = &ssge, .num_sge = 1, .opcode = IW_WR_SEND }, *sbad;
	iw_post_recv(qp, &rwr, &rbad);
	if (iw_cm_connect(id, qp, (struct sockaddr *)&dst, &p))
		return 3;
	while (time(NULL) < end) {
		struct iw_cm_event *ev;
		struct iw_wc wc;

		iw_progress(ctx, 50);
		while (iw_cm_get_event(ch, &ev) == 0) {
			enum iw_cm_event_type t = ev->type;

			iw_cm_ack_event(ev);
			if (t == IW_CM_EVENT_ESTABLISHED) {
				put_advert(ctl + 16, src, iw_mr_stag(src_mr), sizeof(src));
				iw_post_send(qp, &swr, &sbad);
			} else if (t == IW_CM_EVENT_DISCONNECTED) {
				struct iw_term_cause c = iw_qp_error(qp);

				printf("tt_badsink: disconnected, our cause: %s\n", iw_term_cause_str(c));
				rc = iw_term_cause_is_set(c) ? 0 : 1;
				goto out;
			} else {
				printf("tt_badsink: %s\n", iw_cm_event_str(t));
				goto out;
			}
		}
		while (iw_poll_cq(cq, 1, &wc) == 1) {
			if (wc.wr_id != 1 || wc.status != IW_WC_SUCCESS)
				continue;
			if (++recvs == 1) {
				/* The go-ahead after the READ: advertise a sink whose
				 * key is wrong. */
				iw_post_recv(qp, &rwr, &rbad);
				put_advert(ctl + 32, sink, iw_mr_stag(sink_mr) ^ 0x5a, sizeof(sink));
				ssge.addr = (uintptr_t)(ctl + 32);
				iw_post_send(qp, &swr, &sbad);
			}
		}
	}
	printf("tt_badsink: no DISCONNECTED within 20 s\n");
out:
	iw_destroy_qp(qp);
	iw_cm_destroy_id(id);
	iw_cm_destroy_channel(ch);
	iw_dereg_mr(src_mr);
	iw_dereg_mr(sink_mr);
	iw_dereg_mr(ctl_mr);
	iw_destroy_cq(cq);
	iw_dealloc_pd(pd);
	iw_context_destroy(ctx);
	return rc;
}
