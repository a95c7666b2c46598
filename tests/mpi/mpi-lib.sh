# Shared by the tests/mpi scripts and bench/mpi_part.py's recipe: how an
# Open MPI job is pointed at libiwarp. Sourced, not run.

# pml cm + mtl ofi with libfabric's verbs;ofi_rxm (FI_PROVIDER pinned as
# well, so libfabric cannot pick another provider); btl self only: no
# shared-memory (vader) or TCP transport to fall back on.
MPI_OFI_ARGS=(--allow-run-as-root --oversubscribe --mca pml cm --mca mtl ofi
	--mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca btl self
	-x "FI_PROVIDER=verbs;ofi_rxm")

# mpi_need: 0 when mpirun, libfabric and our mpi_check are there.
mpi_need() {
	local p
	for p in mpirun fi_info; do
		if ! command -v $p >/dev/null 2>&1; then
			echo "SKIP: $p missing (apt-get install openmpi-bin libfabric-bin)"
			return 1
		fi
	done
	if [ ! -x "$B/tests/mpi_check" ]; then
		echo "SKIP: $B/tests/mpi_check not built (apt-get install libopenmpi-dev, reconfigure)"
		return 1
	fi
}
