/*
 * list.h - an intrusive doubly linked list (a queue), circular around its
 * head, in the shape of libuv's uv__queue, the Linux kernel's list.h and
 * nginx's ngx_queue_t: each element embeds a struct list, the owner keeps
 * one more as the head, and list_entry() (container_of()) gets back from
 * a node to its element. Every operation is O(1) and none allocates. A
 * head must be list_init()ed before use and never copied as a struct
 * (its neighbours point at it): list_move() hands the elements over.
 *
 *	list_init(&s->conns);
 *	list_insert_tail(&s->conns, &c->node);
 *	list_foreach_safe(it, tmp, &s->conns)
 *		conn_close(list_entry(it, struct conn, node));
 *
 * Singly linked free-lists and chains (cache buckets, arena blocks) stay
 * as they are: a prev pointer would buy them nothing.
 */
#ifndef BASE_LIST_H
#define BASE_LIST_H

#include "util.h"

struct list {
	struct list *next, *prev;
};

/* The element of type around node, whose struct list member is member. */
#define list_entry(node, type, member) container_of(node, type, member)

/* Every node of head in order; the body must not remove it (see _safe). */
#define list_foreach(it, head) \
	for ((it) = (head)->next; (it) != (head); (it) = (it)->next)

/* Every node of head in order; the body may remove (and free) it, though
 * not the node after it (tmp). */
#define list_foreach_safe(it, tmp, head) \
	for ((it) = (head)->next, (tmp) = (it)->next; (it) != (head); \
	     (it) = (tmp), (tmp) = (it)->next)

/* An empty list (or a node on none). */
static inline void list_init(struct list *head)
{
	head->next = head->prev = head;
}

static inline int list_empty(const struct list *head)
{
	return head->next == head;
}

/* The first and the last node of head: head itself when it is empty. */
static inline struct list *list_first(const struct list *head)
{
	return head->next;
}

static inline struct list *list_last(const struct list *head)
{
	return head->prev;
}

/* Put node first, or last, in head. node must be on no list. */
static inline void list_insert_head(struct list *head, struct list *node)
{
	node->next = head->next;
	node->prev = head;
	head->next->prev = node;
	head->next = node;
}

static inline void list_insert_tail(struct list *head, struct list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

/* Take node off its list; it is then on none (list_init()). */
static inline void list_remove(struct list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	list_init(node);
}

/* Give every node of from, in order, to to (whose own are dropped);
 * from is left empty. */
static inline void list_move(struct list *from, struct list *to)
{
	if (list_empty(from)) {
		list_init(to);
		return;
	}
	*to = *from;
	to->next->prev = to;
	to->prev->next = to;
	list_init(from);
}

#endif
