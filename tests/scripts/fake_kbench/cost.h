#define COST 100
