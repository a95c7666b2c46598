#!/usr/bin/env bash
# A tshark that misreports one field, for the cross-check's self-test:
# LIE=msn changes the first MSN to 77, LIE=crc turns the first "Good
# CRC32" into a bad one. The real tshark's exit status is kept.
set -o pipefail
case "${LIE:-}" in
msn) tshark "$@" | sed '0,/name="iwarp_ddp.msn"/{/name="iwarp_ddp.msn"/s/ show="[0-9]*"/ show="77"/}' ;;
crc) tshark "$@" | sed '0,/(Good CRC32)/s//(Bad CRC32, should be 0x00000000)/' ;;
*) exit 99 ;;
esac
