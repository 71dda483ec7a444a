/*
 * test_list.c - unit tests for server/base/list.h: order of insertion at
 * either end, removal while iterating, and moving a list to another head.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/list.h"

struct item {
	int id;
	struct list node;
};

/* The ids of head's items in order, into out; their count. */
static int ids(struct list *head, int *out)
{
	struct list *it;
	int n = 0;

	list_foreach(it, head)
		out[n++] = list_entry(it, struct item, node)->id;
	return n;
}

static void test_list_keeps_insertion_order_at_both_ends(void **state)
{
	struct item it[4] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 } };
	struct list head;
	int got[4];

	(void)state;
	list_init(&head);
	assert_true(list_empty(&head));
	assert_ptr_equal(list_first(&head), &head);
	list_insert_tail(&head, &it[1].node);
	list_insert_tail(&head, &it[2].node);
	list_insert_head(&head, &it[0].node);
	list_insert_tail(&head, &it[3].node);
	assert_false(list_empty(&head));
	assert_int_equal(ids(&head, got), 4);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[1], 1);
	assert_int_equal(got[2], 2);
	assert_int_equal(got[3], 3);
	assert_ptr_equal(list_first(&head), &it[0].node);
	assert_ptr_equal(list_last(&head), &it[3].node);
}

static void test_list_removes_while_iterating(void **state)
{
	struct item it[5];
	struct list head, *p, *next;
	int got[5], k;

	(void)state;
	list_init(&head);
	for (k = 0; k < 5; k++) {
		it[k].id = k;
		list_insert_tail(&head, &it[k].node);
	}
	list_foreach_safe(p, next, &head)
		if (list_entry(p, struct item, node)->id % 2 == 0)
			list_remove(p);
	assert_int_equal(ids(&head, got), 2);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 3);
	assert_true(list_empty(&it[0].node)); /* a removed node is on none */
	list_remove(&it[1].node);
	list_remove(&it[3].node);
	assert_true(list_empty(&head));
}

static void test_list_move_hands_every_node_over(void **state)
{
	struct item it[3] = { { .id = 0 }, { .id = 1 }, { .id = 2 } };
	struct list from, to;
	int got[3], k;

	(void)state;
	list_init(&from);
	list_move(&from, &to); /* an empty list: to is empty too */
	assert_true(list_empty(&to));
	for (k = 0; k < 3; k++)
		list_insert_tail(&from, &it[k].node);
	list_move(&from, &to);
	assert_true(list_empty(&from));
	assert_int_equal(ids(&to, got), 3);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[2], 2);
	assert_ptr_equal(list_last(&to), &it[2].node);
	list_remove(&it[0].node);
	assert_ptr_equal(list_first(&to), &it[1].node);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_keeps_insertion_order_at_both_ends),
		cmocka_unit_test(test_list_removes_while_iterating),
		cmocka_unit_test(test_list_move_hands_every_node_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
