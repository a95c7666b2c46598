/* Queries the engine's owner asks (see rdmap_conn.h): answered from the
 * engine's own bookkeeping, so the owner never re-derives it. */
#include "rdmap_conn.h"

static const struct iw_rdmap_sq_entry *sq_at_c(const struct iw_rdmap_conn *c, uint32_t abs)
{
	return &c->mem.sq[abs % c->mem.sq_depth];
}




bool iw_rdmap_tx_drained(const struct iw_rdmap_conn *c)
{
	return c->sq_head == c->sq_tail && c->tx_count == 0 && !iw_rdmap_tx_pending(c);
}


bool iw_rdmap_oldest_read(const struct iw_rdmap_conn *c, uint64_t *cookie)
{
	if (c->reads_out == 0)
		return false;
	*cookie = sq_at_c(c, c->ord_ring[c->ord_head % IW_RDMAP_MAX_IRD_ORD])->wr.cookie;
	return true;
}

bool iw_rdmap_oldest_started(const struct iw_rdmap_conn *c, unsigned opmask, uint64_t *cookie)
{
	for (uint32_t i = c->sq_head; i != c->sq_next; i++) {
		const struct iw_rdmap_sq_entry *e = sq_at_c(c, i);
		if (opmask & IW_RDMAP_WR_BIT(e->wr.opcode)) {
			*cookie = e->wr.cookie;
			return true;
		}
	}
	return false;
}







enum iw_stag_status iw_rdmap_stag(const struct iw_rdmap_conn *c, uint32_t stag, uint64_t to, size_t len,
				  unsigned access, uint8_t **addr)
{
	return c->ops.stag(c->ctx, stag, to, len, access, addr);
}

struct iw_rdmap_stats iw_rdmap_get_stats(const struct iw_rdmap_conn *c)
{
	return (struct iw_rdmap_stats){
		.fpdus_tx = c->fpdus_tx, .fpdus_rx = c->fpdus_rx, .bytes_placed = c->bytes_placed};
}
