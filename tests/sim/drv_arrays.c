// SPDX-License-Identifier: MIT
/*
 * CUDA arrays through mearas's libcuda, the entry points NVIDIA's runtime
 * does not use. Modes (one behaviour each):
 *   copies    cuMemcpyHtoA/AtoH/DtoA/AtoD (and Async) and AtoA on one-row arrays,
 *             cuMemcpy2D with an array side, cuMemcpy3D between two arrays and two linear
 *             buffers, the descriptors read back
 *   textures  a texture object with a resource view, each description
 *             read back as given; destroyed once
 *   refused   NotSupported for what mearas does not carry (a YUV format,
 *             sparse arrays, mipmapped textures);
 *             invalid values for 1D calls on 2D arrays and boxes outside
 */
#include <stdint.h>
#include <string.h>

#include "drv_check.h"

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

static void copies(void)
{
	CUDA_ARRAY_DESCRIPTOR d = { .Width = 256, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT16, .NumChannels = 2 };
	CUDA_ARRAY_DESCRIPTOR back;
	uint8_t src[1024], out[1024];
	CUdeviceptr dev;
	CUarray a;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuArrayCreate(&a, &d));
	CHECK(cuArrayGetDescriptor(&back, a));
	REQUIRE(back.Width == 256 && back.Height == 0 && back.Format == CU_AD_FORMAT_UNSIGNED_INT16 &&
		back.NumChannels == 2, "descriptor read back differs");
	fill(src, sizeof(src), 3);
	CHECK(cuMemcpyHtoA(a, 0, src, sizeof(src)));
	memset(out, 0, sizeof(out));
	CHECK(cuMemcpyAtoH(out, a, 100, 200));
	REQUIRE(memcmp(out, src + 100, 200) == 0, "AtoH of 200 bytes from byte 100");
	/* through device memory and back, async on a stream */
	CHECK(cuMemAlloc(&dev, sizeof(src)));
	CHECK(cuMemcpyAtoD(dev, a, 0, sizeof(src)));
	CHECK(cuMemcpyDtoA(a, 512, dev, 512));
	CHECK(cuMemcpyAtoHAsync(out, a, 0, sizeof(out), s));
	CHECK(cuStreamSynchronize(s));
	REQUIRE(memcmp(out, src, 512) == 0 && memcmp(out + 512, src, 512) == 0, "AtoD then DtoA at byte 512");
	CHECK(cuMemcpyHtoAAsync(a, 8, src, 8, s));
	CHECK(cuStreamSynchronize(s));
	/* one array into another: 200 bytes from byte 40 to byte 100 */
	CUarray a1;
	CHECK(cuArrayCreate(&a1, &d));
	CHECK(cuMemcpyAtoA(a1, 100, a, 40, 200));
	CHECK(cuMemcpyAtoH(out, a1, 100, 200));
	CHECK(cuMemcpyAtoH(out + 200, a, 40, 200));
	REQUIRE(memcmp(out, out + 200, 200) == 0, "AtoA of 200 bytes");
	CHECK(cuArrayDestroy(a1));

	/* a 2D array: a box in with cuMemcpy2D from host, out to device memory */
	CUDA_ARRAY3D_DESCRIPTOR d3 = { .Width = 16, .Height = 8, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
	CUDA_ARRAY3D_DESCRIPTOR b3;
	CUarray a2;
	CHECK(cuArray3DCreate(&a2, &d3));
	CHECK(cuArray3DGetDescriptor(&b3, a2));
	REQUIRE(b3.Width == 16 && b3.Height == 8 && b3.Depth == 0 && b3.Flags == 0, "3D descriptor read back differs");
	CUDA_MEMCPY2D c = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = 40,
			    .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a2, .dstXInBytes = 8, .dstY = 2,
			    .WidthInBytes = 24, .Height = 5 };
	CHECK(cuMemcpy2D(&c));
	CUDA_MEMCPY2D o = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a2, .srcXInBytes = 8, .srcY = 2,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dev, .dstPitch = 24,
			    .WidthInBytes = 24, .Height = 5 };
	CHECK(cuMemcpy2DAsync(&o, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemcpyDtoH(out, dev, 120));
	for (int r = 0; r < 5; r++)
		REQUIRE(memcmp(out + r * 24, src + r * 40, 24) == 0, "2D box through the array, row %d", r);

	/* the same box between two arrays with cuMemcpy3D, then out */
	CUarray a3;
	CHECK(cuArray3DCreate(&a3, &d3));
	CUDA_MEMCPY3D aa = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a2, .srcXInBytes = 8, .srcY = 2,
			     .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a3, .WidthInBytes = 24, .Height = 5,
			     .Depth = 1 };
	CHECK(cuMemcpy3D(&aa));
	CUDA_MEMCPY2D o3 = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a3, .dstMemoryType = CU_MEMORYTYPE_HOST,
			     .dstHost = out + 512, .dstPitch = 24, .WidthInBytes = 24, .Height = 5 };
	CHECK(cuMemcpy2D(&o3));
	REQUIRE(memcmp(out + 512, out, 120) == 0, "3D copy between two arrays");
	CHECK(cuArrayDestroy(a3));

	/* 3D between two linear buffers: 3 slices of 4 rows of 10 bytes */
	CUDA_MEMCPY3D m = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = 16, .srcHeight = 5,
			    .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = out, .dstPitch = 12, .dstHeight = 4,
			    .WidthInBytes = 10, .Height = 4, .Depth = 3 };
	memset(out, 0, sizeof(out));
	CHECK(cuMemcpy3D(&m));
	for (int z = 0; z < 3; z++)
		for (int y = 0; y < 4; y++)
			REQUIRE(memcmp(out + (z * 4 + y) * 12, src + (z * 5 + y) * 16, 10) == 0, "3D linear slice %d row %d",
				z, y);
	CHECK(cuArrayDestroy(a2));
	CHECK(cuArrayDestroy(a));
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuArrayDestroy(a));
	CHECK(cuMemFree(dev));
	CHECK(cuStreamDestroy(s));
}

static void textures(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 32, .Height = 16, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4 };
	CUDA_RESOURCE_DESC rd, rback;
	CUDA_TEXTURE_DESC td, tback;
	CUDA_RESOURCE_VIEW_DESC vd, vback;
	CUtexObject t = 0;
	CUarray a;

	CHECK(cuArray3DCreate(&a, &d));
	memset(&rd, 0, sizeof(rd));
	rd.resType = CU_RESOURCE_TYPE_ARRAY;
	rd.res.array.hArray = a;
	memset(&td, 0, sizeof(td));
	td.addressMode[0] = CU_TR_ADDRESS_MODE_MIRROR;
	td.addressMode[1] = CU_TR_ADDRESS_MODE_BORDER;
	td.filterMode = CU_TR_FILTER_MODE_POINT;
	td.flags = CU_TRSF_READ_AS_INTEGER;
	td.borderColor[3] = 1.0f;
	memset(&vd, 0, sizeof(vd));
	vd.format = CU_RES_VIEW_FORMAT_UINT_4X8;
	vd.width = 32;
	vd.height = 16;
	CHECK(cuTexObjectCreate(&t, &rd, &td, &vd));
	REQUIRE(t != 0, "texture object 0");
	CHECK(cuTexObjectGetResourceDesc(&rback, t));
	REQUIRE(rback.resType == CU_RESOURCE_TYPE_ARRAY && rback.res.array.hArray == a, "resource read back");
	CHECK(cuTexObjectGetTextureDesc(&tback, t));
	REQUIRE(tback.addressMode[0] == CU_TR_ADDRESS_MODE_MIRROR && tback.addressMode[1] == CU_TR_ADDRESS_MODE_BORDER &&
		tback.flags == CU_TRSF_READ_AS_INTEGER && tback.borderColor[3] == 1.0f, "texture description read back");
	CHECK(cuTexObjectGetResourceViewDesc(&vback, t));
	REQUIRE(vback.format == CU_RES_VIEW_FORMAT_UINT_4X8 && vback.width == 32 && vback.height == 16,
		"view read back");
	CHECK(cuTexObjectDestroy(t));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuTexObjectDestroy(t));
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuTexObjectGetTextureDesc(&tback, t));
	CHECK(cuArrayDestroy(a));
}

static void refused(void)
{
	CUDA_ARRAY3D_DESCRIPTOR yuv = { .Width = 16, .Height = 16, .Format = CU_AD_FORMAT_NV12, .NumChannels = 1 };
	CUDA_ARRAY3D_DESCRIPTOR sparse = { .Width = 16, .Height = 16, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
					   .Flags = CUDA_ARRAY3D_SPARSE };
	CUDA_ARRAY3D_DESCRIPTOR ok = { .Width = 16, .Height = 16, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
	CUDA_RESOURCE_DESC rd;
	CUDA_TEXTURE_DESC td;
	CUtexObject t;
	CUarray a, b;
	uint8_t buf[64] = { 0 };

	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuArray3DCreate(&a, &yuv));
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuArray3DCreate(&a, &sparse));
	CHECK(cuArray3DCreate(&a, &ok));
	CHECK(cuArray3DCreate(&b, &ok));
	/* the 1D calls take one-row arrays; a box past the array's edge */
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoA(a, 0, buf, 16));
	CUDA_MEMCPY2D c = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = buf, .srcPitch = 64,
			    .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = a, .dstXInBytes = 40,
			    .WidthInBytes = 32, .Height = 1 };
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
	/* two arrays: a box past the destination's edge */
	CUDA_MEMCPY3D m = { .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = a, .dstMemoryType = CU_MEMORYTYPE_ARRAY,
			    .dstArray = b, .dstXInBytes = 60, .WidthInBytes = 16, .Height = 1, .Depth = 1 };
	EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&m));
	/* mipmapped arrays as texture resources */
	memset(&rd, 0, sizeof(rd));
	memset(&td, 0, sizeof(td));
	rd.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
	EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuTexObjectCreate(&t, &rd, &td, NULL));
	/* a destroyed array names nothing */
	CHECK(cuArrayDestroy(b));
	rd.resType = CU_RESOURCE_TYPE_ARRAY;
	rd.res.array.hArray = b;
	EXPECT(CUDA_ERROR_INVALID_HANDLE, cuTexObjectCreate(&t, &rd, &td, NULL));
	CHECK(cuArrayDestroy(a));
}

int main(int argc, char **argv)
{
	static const struct drv_mode modes[] = {
		{ "copies", copies }, { "textures", textures }, { "refused", refused },
	};

	return drv_run_mode_in_primary(argc, argv, modes, DRV_NMODES(modes));
}
