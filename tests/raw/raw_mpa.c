/* MPA exchange over our TCP and the QP hand-over: see raw_mpa.h. */
#include "raw_mpa.h"

#include <errno.h>
#include <string.h>

static enum iw_raw_mpa_state fail(struct iw_raw_mpa *m, int err)
{
	m->st = IW_RAW_MPA_FAILED;
	m->err = err;
	return m->st;
}

static int queue_frame(struct iw_raw_mpa *m, const struct iw_mpa_frame *f)
{
	ssize_t n = iw_mpa_frame_encode(f, m->out, sizeof(m->out), NULL);
	if (n < 0)
		return -EINVAL;
	m->out_len = (uint32_t)n;
	m->out_sent = 0;
	return 0;
}

static int flush_out(struct iw_raw_mpa *m, uint64_t now)
{
	while (m->out_sent < m->out_len) {
		int r = iwn_tcp_send(m->c, m->out + m->out_sent, m->out_len - m->out_sent, now);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		m->out_sent += (uint32_t)r;
	}
	return 0;
}

int iw_raw_mpa_start(struct iw_raw_mpa *m, struct iwn_tcp_conn *c, bool initiator,
		     const struct iw_mpa_settings *local, const uint8_t *pdata, uint16_t pdata_len, uint64_t now)
{
	if (!m || !c || !local || pdata_len > IW_MPA_PD_MAX - IW_MPA_V2_WORDS_LEN || (pdata_len && !pdata))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->c = c;
	m->initiator = initiator;
	m->local = *local;
	m->need = IW_MPA_FRAME_HDR_LEN;
	if (pdata_len)
		memcpy(m->req_pd, pdata, pdata_len);
	if (initiator) {
		iw_mpa_make_request(&m->local, m->req_pd, pdata_len, &m->req);
		int rc = queue_frame(m, &m->req);
		if (rc)
			return rc;
		return flush_out(m, now);
	}
	/* Responder: keep our private data for the Reply (req_pd, req.pdata_len). */
	m->req.pdata_len = pdata_len;
	return 0;
}

/* Read the peer's frame exactly: header first, then PD_Length bytes. */
static bool read_frame(struct iw_raw_mpa *m, uint64_t now)
{
	while (m->have < m->need) {
		uint32_t k = iwn_tcp_recv(m->c, m->in + m->have, m->need - m->have, now);
		if (k == 0)
			return false;
		m->have += k;
		if (m->have == IW_MPA_FRAME_HDR_LEN && m->need == IW_MPA_FRAME_HDR_LEN) {
			uint32_t pd = (uint32_t)m->in[18] << 8 | m->in[19];
			if (pd > IW_MPA_PD_MAX)
				pd = IW_MPA_PD_MAX + 1; /* decode reports it */
			m->need = IW_MPA_FRAME_HDR_LEN + (pd > IW_MPA_PD_MAX ? 0 : pd);
		}
	}
	return true;
}

enum iw_raw_mpa_state iw_raw_mpa_step(struct iw_raw_mpa *m, uint64_t now)
{
	if (m->st != IW_RAW_MPA_RUNNING)
		return m->st;
	int rc = flush_out(m, now);
	if (rc)
		return fail(m, rc);
	if (!m->got_frame) {
		if (!read_frame(m, now)) {
			if (iwn_tcp_eof(m->c) || m->c->state == IWN_TCP_CLOSED)
				return fail(m, m->c->err ? m->c->err : -ECONNRESET);
			return m->st;
		}
		enum iw_mpa_frame_error why;
		ssize_t n = iw_mpa_frame_decode(m->in, m->have, m->initiator ? IW_MPA_REPLY : IW_MPA_REQUEST, 0, 0,
						&m->peer, &why);
		if (n <= 0)
			return fail(m, -EPROTO);
		m->got_frame = true;
		if (m->initiator) {
			m->reason = iw_mpa_initiator_check(&m->local, &m->req, &m->peer, &m->outcome);
			if (m->reason != IW_MPA_OK)
				return fail(m, -ECONNREFUSED);
			m->st = IW_RAW_MPA_DONE;
			return m->st;
		}
		struct iw_mpa_frame reply;
		m->reason = iw_mpa_respond(&m->local, &m->peer, m->req_pd, m->req.pdata_len, &reply, &m->outcome);
		if ((rc = queue_frame(m, &reply)) != 0 || (rc = flush_out(m, now)) != 0)
			return fail(m, rc);
	}
	/* Responder: done once the Reply is queued whole. */
	if (m->out_sent < m->out_len)
		return m->st;
	if (m->reason != IW_MPA_OK)
		return fail(m, -ECONNREFUSED);
	m->st = IW_RAW_MPA_DONE;
	return m->st;
}

int iw_raw_qp_establish(struct iw_qp *qp, struct iw_rawdev *dev, struct iwn_tcp_conn *c, bool initiator,
			const struct iw_mpa_outcome *o, uint32_t max_ulpdu, bool no_ooo_place,
			struct iw_transport **out)
{
	if (!qp || !dev || !c || !o || !out)
		return -EINVAL;
	if (initiator && o->p2p && o->rtr != IW_MPA_RTR_WRITE)
		return -EPROTO; /* only the WRITE RTR is ours to send */
	struct iw_qp_conn_params p = {
		.crc = o->crc,
		.markers_tx = o->markers_tx,
		.markers_rx = o->markers_rx,
		.ird = o->ird,
		.ord = o->ord,
		.rfc7306 = o->rfc7306,
		.mulpdu = iw_raw_mulpdu(c, o->markers_tx, max_ulpdu),
	};
	struct iw_raw_tcfg tc = {
		.dev = dev,
		.conn = c,
		.tx_gate = !initiator && o->wait_for_first_fpdu,
		.send_rtr = initiator && o->p2p && o->rtr == IW_MPA_RTR_WRITE,
		.no_ooo_place = no_ooo_place,
	};
	struct iw_transport *t = iw_raw_transport_create(qp->ctx, qp, &tc);
	if (!t)
		return -ENOMEM;
	int rc = iw_qp_connect_start(qp, &p, t);
	if (rc < 0) {
		/* The caller keeps c: the transport must not release it. */
		iw_raw_transport_forget_conn(t);
		t->ops->destroy(t);
		return rc;
	}
	*out = t;
	rc = iw_raw_transport_start(t);
	if (rc < 0)
		t->ops->shutdown(t, true);
	return 0;
}
