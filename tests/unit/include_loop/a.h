/* a module whose source includes b.h */
int a(void);
