/* A small stand-in for a training loop: a loader thread makes batches, the main thread
 * runs forward / backward / update over small dense layers, each in a labelled range,
 * one step per iteration. It uses libprof's annotations when libprof is loaded and runs
 * the same without it (weak symbols). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"

#pragma weak prof_range_push
#pragma weak prof_range_pop
#pragma weak prof_step

#define DIM 96
#define BATCH 32
#define STEPS 20
#define LAYERS 3

static void push(const char *name) { if (prof_range_push) prof_range_push(name); }
static void pop(void) { if (prof_range_pop) prof_range_pop(); }

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	float *items[4];
	int count;
};

static struct queue q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0};

static void *loader(void *arg)
{
	(void)arg;
	for (int s = 0; s < STEPS; s++) {
		push("loader: make batch");
		float *batch = malloc(sizeof(float) * BATCH * DIM);
		for (int i = 0; i < BATCH * DIM; i++)
			batch[i] = (float)((i * 7 + s) % 13) / 13.0f;
		pop();
		pthread_mutex_lock(&q.lock);
		while (q.count == 4)
			pthread_cond_wait(&q.cond, &q.lock);
		q.items[q.count++] = batch;
		pthread_cond_broadcast(&q.cond);
		pthread_mutex_unlock(&q.lock);
	}
	return 0;
}

static float *next_batch(void)
{
	pthread_mutex_lock(&q.lock);
	while (q.count == 0)
		pthread_cond_wait(&q.cond, &q.lock);
	float *b = q.items[0];
	memmove(q.items, q.items + 1, sizeof(float *) * (size_t)--q.count);
	pthread_cond_broadcast(&q.cond);
	pthread_mutex_unlock(&q.lock);
	return b;
}

static float *matmul(const float *x, const float *w, int rows)
{
	float *y = calloc((size_t)rows * DIM, sizeof *y);
	for (int r = 0; r < rows; r++)
		for (int k = 0; k < DIM; k++)
			for (int c = 0; c < DIM; c++)
				y[r * DIM + c] += x[r * DIM + k] * w[k * DIM + c];
	return y;
}

int main(void)
{
	float *weights[LAYERS];
	for (int l = 0; l < LAYERS; l++) {
		weights[l] = malloc(sizeof(float) * DIM * DIM);
		for (int i = 0; i < DIM * DIM; i++)
			weights[l][i] = (float)((i * 31 + l) % 17) / 170.0f;
	}
	pthread_t t;
	pthread_create(&t, 0, loader, 0);
	double loss = 0;
	for (int s = 0; s < STEPS; s++) {
		float *x = next_batch();
		float *acts[LAYERS + 1] = {x};
		push("forward");
		for (int l = 0; l < LAYERS; l++) {
			push("linear");
			acts[l + 1] = matmul(acts[l], weights[l], BATCH);
			pop();
		}
		pop();
		push("backward");
		for (int l = LAYERS - 1; l >= 0; l--) {
			float *grad = matmul(acts[l + 1], weights[l], BATCH);
			loss += grad[0];
			free(grad);
		}
		pop();
		push("optimizer.step");
		for (int l = 0; l < LAYERS; l++)
			for (int i = 0; i < DIM * DIM; i++)
				weights[l][i] *= 0.999f;
		pop();
		for (int l = 0; l <= LAYERS; l++)
			free(acts[l]);
		if (prof_step)
			prof_step();
	}
	pthread_join(t, 0);
	for (int l = 0; l < LAYERS; l++)
		free(weights[l]);
	printf("example_train: %d steps, loss %.3f\n", STEPS, loss);
	return 0;
}
