/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The checks of a run's input before anything runs (checks.c). */
#ifndef QJ_CHECKS_H
#define QJ_CHECKS_H

#include "engine/engine.h"

/* 0, or an error already said in one line. */
int check_input(const struct engine_opts *o);

#endif
