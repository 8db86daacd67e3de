// SPDX-License-Identifier: GPL-2.0-or-later
/* Frame rules from a file's CFI, through libdw (symbols.h). */
#include "naming/symbols.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

/* Offset N of a location "CFA + N" as libdw spells it; false otherwise. */
static bool cfa_offset(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (!nops || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	if (nops == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) &&
	    (ops[2].atom == DW_OP_plus || ops[2].atom == DW_OP_minus)) {
		/* Negated as the unsigned word it is: a file's INT64_MIN
		 * has no opposite in int64_t. */
		*off = (int64_t)(ops[2].atom == DW_OP_plus ? ops[1].number : -ops[1].number);
		return true;
	}
	return false;
}

bool elf_file_frame_rule(struct elf_file *e, uint64_t addr, int ra_reg, struct frame_rule *r)
{
	Dwfl_Module *mod = elf_file_dwfl(e);
	Dwarf_Op ops_mem[3], *ops;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias;
	size_t nops;
	bool ok = false;

	if (!mod)
		return false;
	/*
	 * The CFI speaks of link addresses, ADDR's: BIAS is what the module
	 * adds to them (libdwfl places an offline ET_DYN file at 0x10000), not
	 * something to add here.
	 */
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr, &frame)) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, addr, &frame))
			return false;
	}
	memset(r, 0, sizeof(*r));
	r->cfa_reg = -1;
	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 1)
		goto out;
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		r->cfa_reg = ops[0].atom - DW_OP_breg0;
		r->cfa_off = (int64_t)ops[0].number;
	} else if (ops[0].atom == DW_OP_bregx) {
		r->cfa_reg = ops[0].number;
		r->cfa_off = (int64_t)ops[0].number2;
	}
	if (dwarf_frame_register(frame, ra_reg, ops_mem, &ops, &nops))
		goto out;
	if (!nops && !ops)
		r->ra = RA_IN_REG;
	else if (cfa_offset(ops, nops, &r->ra_off))
		r->ra = RA_AT_CFA;
	ok = true;
out:
	free(frame);
	return ok;
}
